#include "bench/receivers.h"

#include <utility>

#include <fcntl.h>
#include <unistd.h>

#include <boost/beast/http.hpp>

#include <chrono>

#include "util/clock.h"
#include "util/event_loop.h"

namespace seedance::bench {
namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

// A receiver that keeps up: many connections, large batches, no idle limit worth the name.
struct HttpStampReceiver::State {
  explicit State(HttpStampReceiver& owner)
      : server(loop.io(), "bench receiver",
               http::ServerLimits{.max_connections = 1024,
                                  .max_connections_per_client = 1024,
                                  .max_header_bytes = 64 * 1024,
                                  .max_body_bytes = 256u << 20,
                                  .idle_timeout = std::chrono::hours(1)},
               http::ServerHooks{
                   .handle = [&owner](const http::Request& req) -> asio::awaitable<http::Response> {
                     co_return owner.Receive(req);
                   }}) {}
  EventLoop loop;
  http::Server server;
  bool stopped = false;
};

http::Response HttpStampReceiver::Receive(const http::Request& req) {
  const int64_t now = util::WallNowNs();
  ForEachStamp(req.body(), [&](const Stamp& stamp) { recorder_.Record(stamp, now); });
  requests_.fetch_add(1);
  http::Response res{bhttp::status::ok, req.version()};
  res.set(bhttp::field::content_type, "text/plain");
  res.body() = "ok";
  return res;
}

HttpStampReceiver::HttpStampReceiver(DeliveryRecorder& recorder)
    : recorder_(recorder), state_(std::make_unique<State>(*this)) {}

HttpStampReceiver::~HttpStampReceiver() { Stop(); }

Result<std::string> HttpStampReceiver::Start() {
  SEEDANCE_ASSIGN_OR_RETURN(uint16_t port, state_->server.Listen("127.0.0.1:0"));
  state_->loop.Start();
  return "http://127.0.0.1:" + std::to_string(port);
}

void HttpStampReceiver::Stop() {
  if (state_->stopped) return;
  state_->stopped = true;
  state_->loop.Post([s = state_.get()] { s->server.Stop(); });
  state_->loop.Join();
}

FileStampTailer::FileStampTailer(DeliveryRecorder& recorder, std::string path)
    : recorder_(recorder), path_(std::move(path)) {}

FileStampTailer::~FileStampTailer() { Stop(); }

void FileStampTailer::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void FileStampTailer::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void FileStampTailer::Loop() {
  int fd = -1;
  std::string pending;
  char chunk[65536];
  // One last read after stop_, so lines written just before are not missed.
  for (bool last = false; !last;) {
    last = stop_.load();
    if (fd < 0) fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    bool progressed = false;
    while (fd >= 0) {
      ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n <= 0) break;
      progressed = true;
      pending.append(chunk, static_cast<size_t>(n));
    }
    const size_t complete = pending.rfind('\n');
    if (complete != std::string::npos) {
      const int64_t now = util::WallNowNs();
      ForEachStamp(std::string_view(pending).substr(0, complete + 1),
                   [&](const Stamp& stamp) { recorder_.Record(stamp, now); });
      pending.erase(0, complete + 1);
    }
    if (!progressed && !last) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (fd >= 0) ::close(fd);
}

}  // namespace seedance::bench
