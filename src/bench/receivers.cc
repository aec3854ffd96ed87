#include "bench/receivers.h"

#include <utility>

#include <fcntl.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <list>

#include <mutex>
#include "util/clock.h"

namespace seedance::bench {
namespace asio = boost::asio;
namespace http = boost::beast::http;

struct HttpStampReceiver::State {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor{io};
  std::mutex mu;
  std::list<asio::ip::tcp::socket*> open;  // connections to shut down on Stop
  std::list<std::thread> threads;
  std::thread accept_thread;
  std::atomic<bool> stopping{false};
};

HttpStampReceiver::HttpStampReceiver(DeliveryRecorder& recorder)
    : recorder_(recorder), state_(std::make_shared<State>()) {}

HttpStampReceiver::~HttpStampReceiver() { Stop(); }

Result<std::string> HttpStampReceiver::Start() {
  boost::system::error_code ec;
  asio::ip::tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  state_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) state_->acceptor.bind(endpoint, ec);
  if (!ec) state_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status(StatusCode::kUnavailable, "bench receiver: " + ec.message());
  const uint16_t port = state_->acceptor.local_endpoint().port();
  State* s = state_.get();
  state_->accept_thread = std::thread([this, s] {
    while (!s->stopping.load()) {
      auto sock = std::make_unique<asio::ip::tcp::socket>(s->io);
      boost::system::error_code aec;
      s->acceptor.accept(*sock, aec);
      if (aec) return;
      sock->set_option(asio::ip::tcp::no_delay(true), aec);
      std::lock_guard<std::mutex> lock(s->mu);
      asio::ip::tcp::socket* raw = sock.release();
      s->open.push_back(raw);
      s->threads.emplace_back([this, s, raw] {
        boost::beast::flat_buffer buffer;
        boost::system::error_code rec;
        while (true) {
          http::request_parser<http::string_body> parser;
          parser.body_limit(256u << 20);
          http::read(*raw, buffer, parser, rec);
          if (rec) break;
          const int64_t now = util::WallNowNs();
          const auto& req = parser.get();
          ForEachStamp(req.body(), [&](const Stamp& stamp) { recorder_.Record(stamp, now); });
          requests_.fetch_add(1);
          http::response<http::string_body> res{http::status::ok, req.version()};
          res.set(http::field::content_type, "text/plain");
          res.keep_alive(req.keep_alive());
          res.body() = "ok";
          res.prepare_payload();
          http::write(*raw, res, rec);
          if (rec || !req.keep_alive()) break;
        }
        std::lock_guard<std::mutex> lock(s->mu);
        s->open.remove(raw);
        boost::system::error_code cec;
        raw->close(cec);
        delete raw;
      });
    }
  });
  return "http://127.0.0.1:" + std::to_string(port);
}

void HttpStampReceiver::Stop() {
  State* s = state_.get();
  if (s->stopping.exchange(true)) return;
  boost::system::error_code ec;
  // Wakes the blocking accept(): shutdown(2) on a listening socket makes it return.
  ::shutdown(s->acceptor.native_handle(), SHUT_RDWR);
  if (s->accept_thread.joinable()) s->accept_thread.join();
  s->acceptor.close(ec);
  std::list<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    for (auto* sock : s->open) sock->shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    threads.swap(s->threads);
  }
  for (auto& t : threads) t.join();
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
