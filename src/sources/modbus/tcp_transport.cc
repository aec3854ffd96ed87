// Modbus TCP: MBAP frames over one connection to a device or gateway (several unit ids may sit
// behind it). One request at a time: many gateways answer pipelined requests out of order or
// not at all.
#include <fmt/format.h>

#include <array>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "sources/modbus/modbus_settings.h"
#include "sources/modbus/pending_request.h"
#include "sources/modbus/transport.h"
#include "util/event_loop.h"

namespace seedance::sources::modbus_source {
namespace {

using boost::asio::ip::tcp;
using boost::system::error_code;

class TcpTransport final : public Transport, public std::enable_shared_from_this<TcpTransport> {
 public:
  TcpTransport(EventLoop& loop, const ModbusSettings& s)
      : host_(s.endpoint.host),
        port_(s.endpoint.port),
        timeout_(s.timeout),
        backoff_(s.reconnect_max),
        resolver_(loop.io()),
        socket_(loop.io()),
        timer_(loop.io()),
        pending_(loop.io().get_executor()) {}

  void Read(uint8_t unit, modbus::Area area, uint16_t address, uint16_t count, Done done) override {
    request_ = Request{unit, area, address, count};
    const uint64_t id = pending_.Begin(std::move(done));
    if (connected_) {
      Send(id);
      return;
    }
    if (backoff_.Waiting(std::chrono::steady_clock::now())) {
      Fail(id, Failure::kUnreachable, "not connected (" + last_connect_error_ + ")");
      return;
    }
    Connect(id);
  }

  bool connected() const override { return connected_; }

  void Shutdown() override {
    pending_.Shutdown();
    Disconnect();
  }

 private:
  struct Request {
    uint8_t unit = 0;
    modbus::Area area = modbus::Area::kHoldingRegisters;
    uint16_t address = 0;
    uint16_t count = 0;
  };

  void Arm(uint64_t id, Failure failure, std::string what) {
    timer_.expires_after(timeout_);
    timer_.async_wait([self = shared_from_this(), id, failure, what](error_code ec) {
      if (ec || !self->pending_.Current(id)) return;
      if (failure == Failure::kUnreachable) {
        self->ConnectFailed(id, what);
        return;
      }
      self->Disconnect();  // a late answer must not be taken for the next request's
      self->Fail(id, failure, what);
    });
  }

  void Connect(uint64_t id) {
    Arm(id, Failure::kUnreachable, fmt::format("connect to {}:{} timed out", host_, port_));
    resolver_.async_resolve(
        host_, std::to_string(port_),
        [self = shared_from_this(), id](error_code ec, tcp::resolver::results_type results) {
          if (!self->pending_.Current(id)) return;
          if (ec) {
            self->ConnectFailed(id, "resolving " + self->host_ + ": " + ec.message());
            return;
          }
          boost::asio::async_connect(
              self->socket_, results, [self, id](error_code ec, const tcp::endpoint&) {
                if (!self->pending_.Current(id)) return;
                if (ec) {
                  self->ConnectFailed(id, fmt::format("connect to {}:{}: {}", self->host_,
                                                      self->port_, ec.message()));
                  return;
                }
                error_code ignored;
                self->socket_.set_option(tcp::no_delay(true), ignored);
                self->connected_ = true;
                self->backoff_.Succeeded();
                self->Send(id);
              });
        });
  }

  void ConnectFailed(uint64_t id, std::string why) {
    Disconnect();
    backoff_.Failed(std::chrono::steady_clock::now());
    last_connect_error_ = why;
    Fail(id, Failure::kUnreachable, std::move(why));
  }

  void Send(uint64_t id) {
    Arm(id, Failure::kTimeout,
        fmt::format("no answer from unit {} within {} ms", request_.unit,
                    std::chrono::duration_cast<std::chrono::milliseconds>(timeout_).count()));
    ++transaction_;
    out_ =
        modbus::TcpFrame(transaction_, request_.unit,
                         modbus::ReadRequestPdu(request_.area, request_.address, request_.count));
    in_.clear();
    boost::asio::async_write(socket_, boost::asio::buffer(out_),
                             [self = shared_from_this(), id](error_code ec, size_t) {
                               if (!self->pending_.Current(id)) return;
                               if (ec) {
                                 self->Dropped(id, ec);
                                 return;
                               }
                               self->Receive(id);
                             });
  }

  void Receive(uint64_t id) {
    socket_.async_read_some(boost::asio::buffer(chunk_),
                            [self = shared_from_this(), id](error_code ec, size_t n) {
                              if (!self->pending_.Current(id)) return;
                              if (ec) {
                                self->Dropped(id, ec);
                                return;
                              }
                              self->in_.append(self->chunk_.data(), n);
                              self->Parse(id);
                            });
  }

  void Parse(uint64_t id) {
    auto frame = modbus::PeekTcpFrame(in_);
    if (!frame) {
      Garbled(id, frame.error().message());
      return;
    }
    if (!frame->has_value()) {
      Receive(id);
      return;
    }
    const modbus::TcpAdu& adu = (*frame)->first;
    if (adu.transaction != transaction_ || adu.unit != request_.unit) {
      Garbled(id, fmt::format("an answer with transaction {} from unit {} to transaction {} of "
                              "unit {}",
                              adu.transaction, adu.unit, transaction_, request_.unit));
      return;
    }
    auto answer = modbus::DecodeReadResponse(request_.area, request_.count, adu.pdu);
    if (!answer) {
      Garbled(id, answer.error().message());
      return;
    }
    if ((*frame)->second != in_.size()) {
      Garbled(id, fmt::format("{} bytes past the answer", in_.size() - (*frame)->second));
      return;
    }
    timer_.cancel();
    Finish(id, PendingRequest::Answered(std::move(*answer)));
  }

  void Dropped(uint64_t id, const error_code& ec) {
    Disconnect();
    Fail(id, Failure::kDropped, "connection lost: " + ec.message());
  }

  void Garbled(uint64_t id, std::string why) {
    Disconnect();  // a stream that sent something else cannot be trusted to be in step
    Fail(id, Failure::kGarbled, std::move(why));
  }

  void Fail(uint64_t id, Failure failure, std::string detail) {
    Finish(id, PendingRequest::Failed(failure, std::move(detail)));
  }

  // Completes request `id` once, on a later turn of the loop (a caller that sends the next
  // request from `done` does not nest inside this one's handler).
  void Finish(uint64_t id, Outcome o) {
    if (!pending_.Current(id)) return;
    timer_.cancel();
    pending_.Complete(id, std::move(o), shared_from_this());
  }

  void Disconnect() {
    error_code ignored;
    resolver_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    connected_ = false;
    in_.clear();
  }

  const std::string host_;
  const uint16_t port_;
  const std::chrono::nanoseconds timeout_;
  ReconnectBackoff backoff_;
  std::string last_connect_error_;
  tcp::resolver resolver_;
  tcp::socket socket_;
  boost::asio::steady_timer timer_;
  bool connected_ = false;
  uint16_t transaction_ = 0;
  Request request_;
  PendingRequest pending_;
  std::string out_;
  std::string in_;  // at most one frame (260 bytes) and one chunk: PeekTcpFrame bounds it
  std::array<char, 512> chunk_{};
};

}  // namespace

std::shared_ptr<Transport> MakeTcpTransport(EventLoop& loop, const ModbusSettings& settings) {
  return std::make_shared<TcpTransport>(loop, settings);
}

std::string_view FailureName(Failure f) {
  switch (f) {
    case Failure::kUnreachable:
      return "unreachable";
    case Failure::kTimeout:
      return "timeout";
    case Failure::kDropped:
      return "dropped";
    case Failure::kGarbled:
      return "garbled";
    case Failure::kCrc:
      return "crc";
  }
  return "?";
}

}  // namespace seedance::sources::modbus_source
