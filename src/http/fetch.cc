#include "http/fetch.h"

#include <fmt/format.h>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/http.hpp>

#include <optional>

#include "http/client.h"
#include "http/url.h"

namespace seedance::http {

namespace bhttp = boost::beast::http;

namespace {

class FetchExchange final : public Exchange {
 public:
  std::optional<Result<FetchReply>> result;

 private:
  void Answered(const Answer& answer) override {
    if (answer.body_cut) {
      result =
          Status(StatusCode::kUnavailable,
                 fmt::format("answered {} with a body over the limit or cut short", answer.status));
      return;
    }
    result = FetchReply{static_cast<int>(answer.status), std::string(answer.body)};
  }
  void Failed(std::string reason, bool /*stopped*/) override {
    result = Status(StatusCode::kUnavailable, std::move(reason));
  }
};

}  // namespace

Result<FetchReply> Fetch(const std::string& method, const std::string& url, const std::string& body,
                         const std::string& content_type, std::chrono::milliseconds timeout,
                         uint64_t max_body, const std::string& authorization) {
  SEEDANCE_ASSIGN_OR_RETURN(Url u, ParseUrl(url));
  const bhttp::verb verb = bhttp::string_to_verb(method);
  if (verb != bhttp::verb::get && verb != bhttp::verb::put && verb != bhttp::verb::post) {
    return InvalidArgumentError("method " + method + " is not GET, PUT or POST");
  }
  boost::asio::io_context io;
  SEEDANCE_ASSIGN_OR_RETURN(
      std::shared_ptr<Client> client,
      Client::Make(io, {.url = u, .max_response_body = max_body, .component = "fetch"}));
  FetchExchange exchange;
  ClientRequest& req = client->NewRequest(exchange, verb, verb == bhttp::verb::get ? "" : body);
  if (verb != bhttp::verb::get) req.set(bhttp::field::content_type, content_type);
  if (!authorization.empty()) req.set(bhttp::field::authorization, authorization);
  req.keep_alive(false);
  boost::asio::steady_timer deadline(io, timeout);
  deadline.async_wait([&](boost::system::error_code ec) {
    if (!ec) client->Abort(1);
  });
  client->Send(exchange, 1);
  while (!exchange.result && io.run_one() > 0) {
  }
  deadline.cancel();
  client->Stop();
  io.run();  // lets the cancelled operations finish
  if (!exchange.result) return Status(StatusCode::kUnavailable, method + " " + url + ": no answer");
  if (!*exchange.result) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("{} {}: {}", method, url, exchange.result->error().message()));
  }
  return std::move(*exchange.result);
}

}  // namespace seedance::http
