// Modbus RTU: frames (unit, PDU, CRC-16) on a serial line. Before each request the line must
// have been silent for 3.5 characters (1.75 ms above 19,200 baud) and what the receive buffer
// holds (noise, a late answer) is discarded; the answer's length follows from the request (or
// is an exception's 5 bytes), so a frame ends when its bytes are in, not at a silence: USB
// serial adapters deliver bytes in bursts that make the 1.5-character rule unusable on receive.
#include <fmt/format.h>
#include <termios.h>

#include <array>
#include <boost/asio/serial_port.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "sources/modbus/modbus_settings.h"
#include "sources/modbus/pending_request.h"
#include "sources/modbus/transport.h"
#include "util/event_loop.h"

namespace seedance::sources::modbus_source {
namespace {

using boost::asio::serial_port;
using boost::system::error_code;

class RtuTransport final : public Transport, public std::enable_shared_from_this<RtuTransport> {
 public:
  RtuTransport(EventLoop& loop, const ModbusSettings& s)
      : device_(s.endpoint.device),
        baud_(static_cast<unsigned>(s.baud)),
        parity_(s.parity),
        stop_bits_(static_cast<int>(s.stop_bits)),
        silence_(modbus::InterFrameDelay(static_cast<uint32_t>(s.baud), s.bits_per_char())),
        timeout_(s.timeout),
        backoff_(s.reconnect_max),
        port_(loop.io()),
        timer_(loop.io()),
        pending_(loop.io().get_executor()) {}

  void Read(uint8_t unit, modbus::Area area, uint16_t address, uint16_t count, Done done) override {
    unit_ = unit;
    area_ = area;
    count_ = count;
    pdu_ = modbus::ReadRequestPdu(area, address, count);
    const uint64_t id = pending_.Begin(std::move(done));
    if (!port_.is_open()) {
      if (backoff_.Waiting(std::chrono::steady_clock::now())) {
        Fail(id, Failure::kUnreachable, "serial line not open (" + open_error_ + ")");
        return;
      }
      if (Status s = Open(); !s.ok()) {
        backoff_.Failed(std::chrono::steady_clock::now());
        open_error_ = s.message();
        Fail(id, Failure::kUnreachable, s.message());
        return;
      }
      backoff_.Succeeded();
    }
    // The line must be silent for 3.5 characters before a frame.
    timer_.expires_at(last_activity_ + silence_);
    timer_.async_wait([self = shared_from_this(), id](error_code ec) {
      if (ec || !self->pending_.Current(id)) return;
      self->Send(id);
    });
  }

  bool connected() const override { return port_.is_open(); }

  void Shutdown() override {
    pending_.Shutdown();
    Close();
  }

 private:
  Status Open() {
    error_code ec;
    port_.open(device_, ec);
    if (ec) return UnavailableError("opening " + device_ + ": " + ec.message());
    using P = serial_port;
    port_.set_option(P::baud_rate(baud_), ec);
    if (!ec) port_.set_option(P::character_size(8), ec);
    if (!ec) {
      port_.set_option(P::parity(parity_ == Parity::kNone   ? P::parity::none
                                 : parity_ == Parity::kEven ? P::parity::even
                                                            : P::parity::odd),
                       ec);
    }
    if (!ec) {
      port_.set_option(P::stop_bits(stop_bits_ == 2 ? P::stop_bits::two : P::stop_bits::one), ec);
    }
    if (!ec) port_.set_option(P::flow_control(P::flow_control::none), ec);
    if (ec) {
      Close();
      return UnavailableError("setting up " + device_ + ": " + ec.message());
    }
    return Status::Ok();
  }

  void Send(uint64_t id) {
    ::tcflush(port_.native_handle(), TCIFLUSH);  // noise or a late answer: not this request's
    in_.clear();
    out_ = modbus::RtuFrame(unit_, pdu_);
    timer_.expires_after(timeout_);
    timer_.async_wait([self = shared_from_this(), id](error_code ec) {
      if (ec || !self->pending_.Current(id)) return;
      self->last_activity_ = std::chrono::steady_clock::now();
      self->Fail(
          id, self->in_.empty() ? Failure::kTimeout : Failure::kGarbled,
          self->in_.empty()
              ? fmt::format(
                    "no answer from unit {} within {} ms", self->unit_,
                    std::chrono::duration_cast<std::chrono::milliseconds>(self->timeout_).count())
              : fmt::format("{} bytes of a frame from unit {}, then silence", self->in_.size(),
                            self->unit_));
    });
    boost::asio::async_write(port_, boost::asio::buffer(out_),
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
    port_.async_read_some(boost::asio::buffer(chunk_),
                          [self = shared_from_this(), id](error_code ec, size_t n) {
                            if (!self->pending_.Current(id)) return;
                            if (ec) {
                              self->Dropped(id, ec);
                              return;
                            }
                            self->last_activity_ = std::chrono::steady_clock::now();
                            self->in_.append(self->chunk_.data(), n);
                            self->Parse(id);
                          });
  }

  void Parse(uint64_t id) {
    const uint8_t fc = static_cast<uint8_t>(area_);
    size_t want = modbus::RtuResponseBytes(area_, count_);
    if (in_.size() >= 2 && static_cast<uint8_t>(in_[1]) == (fc | 0x80))
      want = modbus::kRtuExceptionBytes;
    if (in_.size() < want) {
      Receive(id);
      return;
    }
    // Bytes past the answer's length are noise (or another frame): the frame is judged by its
    // own bytes, the rest flushed before the next request.
    std::string_view frame = std::string_view(in_).substr(0, want);
    auto pdu = modbus::CheckRtuFrame(unit_, frame);
    if (!pdu) {
      const bool crc = pdu.error().message().starts_with("CRC");
      Fail(id, crc ? Failure::kCrc : Failure::kGarbled, pdu.error().message());
      return;
    }
    auto answer = modbus::DecodeReadResponse(area_, count_, *pdu);
    if (!answer) {
      Fail(id, Failure::kGarbled, answer.error().message());
      return;
    }
    Finish(id, PendingRequest::Answered(std::move(*answer)));
  }

  void Dropped(uint64_t id, const error_code& ec) {
    Close();  // reopened by the next request
    Fail(id, Failure::kDropped, device_ + ": " + ec.message());
  }

  void Fail(uint64_t id, Failure failure, std::string detail) {
    Finish(id, PendingRequest::Failed(failure, std::move(detail)));
  }

  void Finish(uint64_t id, Outcome o) {
    if (!pending_.Current(id)) return;
    timer_.cancel();
    error_code ignored;
    if (port_.is_open()) port_.cancel(ignored);
    pending_.Complete(id, std::move(o), shared_from_this());
  }

  void Close() {
    error_code ignored;
    port_.cancel(ignored);
    port_.close(ignored);
  }

  const std::string device_;
  const unsigned baud_;
  const Parity parity_;
  const int stop_bits_;
  const std::chrono::microseconds silence_;
  const std::chrono::nanoseconds timeout_;
  ReconnectBackoff backoff_;
  std::string open_error_;
  serial_port port_;
  boost::asio::steady_timer timer_;
  std::chrono::steady_clock::time_point last_activity_{};
  uint8_t unit_ = 0;
  modbus::Area area_ = modbus::Area::kHoldingRegisters;
  uint16_t count_ = 0;
  std::string pdu_;
  PendingRequest pending_;
  std::string out_;
  std::string in_;  // at most one answer's bytes and one chunk
  std::array<char, 512> chunk_{};
};

}  // namespace

std::shared_ptr<Transport> MakeRtuTransport(EventLoop& loop, const ModbusSettings& settings) {
  return std::make_shared<RtuTransport>(loop, settings);
}

}  // namespace seedance::sources::modbus_source
