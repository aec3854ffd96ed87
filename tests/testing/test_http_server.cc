#include "testing/test_http_server.h"

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <chrono>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace seedance::testing {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

struct TestHttpServer::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::thread accept_thread;
  mutable std::mutex mu;
  Responder responder;
  std::vector<std::string> accepted;
  std::vector<std::shared_ptr<tcp::socket>> sockets;
  std::vector<std::thread> threads;
  bool stopped = false;
  unsigned short port = 0;

  // Whether a connection the kernel has established waits to be accepted (the listening socket
  // is readable). REQUIRES: mu held, so that a connection is either still queued or already
  // counted in open_. (Not TCP_INFO's queue length: qemu-user, which runs the arm64 tests,
  // passes that option through truncated to an int.)
  bool QueuedLocked() {
    pollfd p{.fd = acceptor.native_handle(), .events = POLLIN, .revents = 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
  }
};

TestHttpServer::TestHttpServer(Responder responder) : impl_(std::make_unique<Impl>()) {
  impl_->responder = std::move(responder);
  tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(ep.protocol());
  impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor.bind(ep);
  impl_->acceptor.listen();
  const int listen_fd = impl_->acceptor.native_handle();
  ::fcntl(listen_fd, F_SETFL, ::fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
  impl_->port = impl_->acceptor.local_endpoint().port();
  impl_->accept_thread = std::thread([this, listen_fd] {
    while (true) {
      // Wait for a connection, then take it and count it under the lock (the listening socket
      // does not block), so that WaitUntilIdle never finds it in neither place.
      pollfd p{.fd = listen_fd, .events = POLLIN, .revents = 0};
      if (::poll(&p, 1, -1) < 0 && errno != EINTR) return;
      std::lock_guard<std::mutex> lock(impl_->mu);
      if (impl_->stopped) return;
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
          continue;
        return;
      }
      auto socket = std::make_shared<tcp::socket>(impl_->io);
      boost::system::error_code ec;
      socket->assign(tcp::v4(), fd, ec);
      if (ec) {
        ::close(fd);
        continue;
      }
      impl_->sockets.push_back(socket);
      ++open_;
      impl_->threads.emplace_back([this, socket] {
        struct Closed {
          std::atomic<int>& open;
          ~Closed() { --open; }
        } closed{open_};
        boost::beast::flat_buffer buffer;
        while (true) {
          http::request<http::string_body> req;
          boost::system::error_code ec;
          http::read(*socket, buffer, req, ec);
          if (ec) return;
          const int n = ++requests_;
          Responder responder;
          {
            std::lock_guard<std::mutex> lock(impl_->mu);
            responder = impl_->responder;
          }
          const TestHttpReply reply = responder(req.body(), n);
          if (reply.hang) continue;  // the next read ends when the client closes
          http::response<http::string_body> res{static_cast<http::status>(reply.status), 11};
          if (!reply.retry_after.empty()) res.set(http::field::retry_after, reply.retry_after);
          res.body() = !reply.body.empty()  ? reply.body
                       : reply.status < 300 ? ""
                                            : "scripted refusal";
          res.keep_alive(true);
          res.prepare_payload();
          if (reply.status >= 200 && reply.status < 300) {
            std::lock_guard<std::mutex> lock(impl_->mu);
            impl_->accepted.push_back(req.body());
          }
          if (reply.claimed_length > 0) {
            res.content_length(reply.claimed_length);
            http::response_serializer<http::string_body> sr{res};
            http::write_header(*socket, sr, ec);
            boost::asio::write(*socket, boost::asio::buffer(res.body()), ec);
            socket->shutdown(tcp::socket::shutdown_both, ec);
            return;
          }
          http::write(*socket, res, ec);
          if (ec) return;
        }
      });
    }
  });
}

TestHttpServer::~TestHttpServer() { Stop(); }

std::string TestHttpServer::url() const {
  return "http://127.0.0.1:" + std::to_string(impl_->port) + "/ingest";
}

std::vector<std::string> TestHttpServer::accepted() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->accepted;
}

bool TestHttpServer::WaitUntilIdle(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      if (open_.load() == 0 && !impl_->QueuedLocked()) return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void TestHttpServer::SetResponder(Responder responder) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->responder = std::move(responder);
}

void TestHttpServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  // The accept thread waits in poll() on the listening socket: a connection wakes it, and it
  // sees `stopped`.
  {
    boost::system::error_code ec;
    tcp::socket poke(impl_->io);
    poke.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), impl_->port), ec);
  }
  if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    boost::system::error_code ec;
    impl_->acceptor.close(ec);
    for (auto& s : impl_->sockets) s->shutdown(tcp::socket::shutdown_both, ec);
    threads.swap(impl_->threads);
  }
  for (auto& t : threads) t.join();
}

}  // namespace seedance::testing
