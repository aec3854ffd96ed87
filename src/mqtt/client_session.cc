// Client (client.h), one connection's traffic: reading and handling the broker's packets,
// keep-alive and answer watchdogs, acknowledgements, and writes. client.cc has the client's
// life: start and stop, connect and reconnect.
#include "mqtt/client.h"

#include <fmt/format.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <optional>

#include "mqtt/codec.h"
#include "mqtt/read_pacer.h"
#include "mqtt/reason_codes.h"
#include "util/log.h"
#include "util/scratch_buffer.h"
#include "util/strings.h"

namespace seedance::mqtt {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using boost::system::error_code;

Result<bool> Client::TakeBufferedPacket() {
  Result<bool> taken = reader_.Next();
  if (taken && *taken) last_rx_ = std::chrono::steady_clock::now();
  return taken;
}

Status Client::Received(error_code ec, size_t n) {
  if (ec) {
    return UnavailableError(ec == asio::error::eof ? std::string("broker closed the connection")
                                                   : "connection lost: " + ec.message());
  }
  reader_.Append(read_buffer_.data(), n);
  return Status::Ok();
}

awaitable<Result<Packet>> Client::ReadPacket() {
  while (true) {
    Result<bool> taken = TakeBufferedPacket();
    if (!taken) co_return taken.error();
    if (*taken) co_return std::move(reader_.packet());
    if (!IsOpen()) co_return UnavailableError("connection closed");
    error_code ec;
    const size_t n = co_await conn_->AsyncReadSome(asio::buffer(read_buffer_),
                                                   asio::redirect_error(use_awaitable, ec));
    if (Status s = Received(ec, n); !s.ok()) co_return s;
  }
}

awaitable<Status> Client::ReadLoop() {
  asio::co_spawn(io_, KeepAlive(shared_from_this(), generation_), asio::detached);
  if (opts_.ack_timeout.count() > 0) {
    asio::co_spawn(io_, WatchAnswers(shared_from_this(), generation_), asio::detached);
  }
  bool linger_before_read = false;  // the last read did not fill the buffer
  ReadPacer pacer(opts_.read_linger);
  auto read_at = std::chrono::steady_clock::now();
  size_t taken_since_read = 0;  // packets the last read brought
  while (!stopped_) {
    Result<bool> p = TakeBufferedPacket();
    if (!p) co_return p.error();
    if (!*p) {  // read more, here: a call to ReadPacket() would cost a frame
      if (!IsOpen()) co_return UnavailableError("connection closed");
      error_code ec;
      pacer.OnRead(read_at, taken_since_read);
      std::optional<std::chrono::steady_clock::time_point> linger_start;
      if (linger_before_read && inbound_.size() < kLingerMaxUnacked) {
        linger_start = std::chrono::steady_clock::now();
        // Acknowledge what has arrived at the TCP level now: a broker sending with Nagle's
        // algorithm (mosquitto's default) holds its next messages until our ACK, which the
        // kernel would otherwise delay — at QoS 0, with no PUBACK of ours to carry it, up to
        // its delayed-ACK timer.
        conn_->RequestQuickAck();
        // Edge-triggered epoll would wake the loop for every message that arrives during the
        // linger; with the receive low-water mark at a buffer's worth the kernel wakes it only
        // for that much. Setting it back to 1 signals what is there (the read below takes it).
        conn_->SetReceiveLowWatermark(read_buffer_.size());
        read_linger_timer_.expires_after(pacer.Linger());
        co_await read_linger_timer_.async_wait(asio::redirect_error(use_awaitable, ec));
        conn_->SetReceiveLowWatermark(1);
        if (stopped_ || !IsOpen()) continue;
        ec.clear();
      }
      size_t n = 0;
      bool read = false;
      bool lingered_data = false;  // what this read takes arrived during the linger
      if (linger_start && !conn_->tls()) {
        // After a linger the data is usually there: a non-blocking read takes it without an
        // asynchronous operation, whose memory came from the heap each time (the timer's
        // recycled block is smaller than a read's).
        n = conn_->socket().read_some(asio::buffer(read_buffer_), ec);
        read = ec != asio::error::would_block && ec != asio::error::try_again;
        if (!read) ec.clear();
        lingered_data = read;
      }
      if (!read) {
        const auto waiting_since = std::chrono::steady_clock::now();
        n = co_await conn_->AsyncReadSome(asio::buffer(read_buffer_),
                                          asio::redirect_error(use_awaitable, ec));
        // Over TLS the linger's data is read here, at once; a read that had to wait took
        // something that arrived after the linger (dated now, not from the linger's start).
        lingered_data = linger_start && conn_->tls() &&
                        std::chrono::steady_clock::now() - waiting_since < kReadAtOnce;
      }
      if (Status status = Received(ec, n); !status.ok()) co_return status;
      read_at = std::chrono::steady_clock::now();
      read_waited_ = lingered_data ? read_at - *linger_start : std::chrono::nanoseconds(0);
      taken_since_read = 0;
      // A full buffer: more is waiting, read it at once.
      linger_before_read = opts_.read_linger.count() > 0 && n < read_buffer_.size();
      continue;
    }
    ++taken_since_read;
    bool refused = false;
    Status s = HandlePacket(reader_.packet(), &refused);
    if (!s.ok()) co_return s;
    while (refused_ && !stopped_) {
      paused_ = true;
      if (!resume_pending_) {
        resume_timer_.expires_at(asio::steady_timer::time_point::max());
        error_code ec;
        co_await resume_timer_.async_wait(asio::redirect_error(use_awaitable, ec));
      }
      resume_pending_ = false;
      paused_ = false;
      last_rx_ = std::chrono::steady_clock::now();
      if (stopped_ || !IsOpen()) break;
      if (on_message_(*refused_, refused_token_, refused_invalid_)) refused_.reset();
    }
  }
  // Stopped: keep the socket open so pending acknowledgements can still be sent; Close()
  // ends it.
  while (!closed_ && IsOpen()) {
    error_code ec;
    resume_timer_.expires_at(asio::steady_timer::time_point::max());
    co_await resume_timer_.async_wait(asio::redirect_error(use_awaitable, ec));
  }
  co_return CancelledError("stopped");
}

awaitable<void> Client::KeepAlive([[maybe_unused]] std::shared_ptr<Client> self,
                                  uint64_t generation) {
  if (keep_alive_s_ == 0) co_return;
  const auto period = std::chrono::seconds(keep_alive_s_);
  asio::steady_timer timer(io_);
  while (generation == generation_ && IsOpen() && !closed_) {
    timer.expires_after(period);
    error_code ec;
    co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
    if (generation != generation_ || !IsOpen() || closed_) break;
    if (!paused_ && std::chrono::steady_clock::now() - last_rx_ > 2 * period) {
      // No PINGRESP to the last PINGREQ: the connection is dead.
      EndConnection(fmt::format("nothing from the broker in {} s (keep-alive {} s)",
                                2 * keep_alive_s_, keep_alive_s_));
      break;
    }
    SendPing();
  }
}

awaitable<void> Client::WatchAnswers([[maybe_unused]] std::shared_ptr<Client> self,
                                     uint64_t generation) {
  // A tenth of the timeout, 10 ms to 1 s: a connection ends at most that late.
  const auto period = std::clamp<std::chrono::milliseconds>(
      opts_.ack_timeout / 10, std::chrono::milliseconds(10), std::chrono::seconds(1));
  asio::steady_timer timer(io_);
  while (generation == generation_ && IsOpen() && !closed_) {
    timer.expires_after(period);
    error_code ec;
    co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
    if (generation != generation_ || !IsOpen() || closed_) break;
    if (paused_) continue;  // not reading: the answers may be waiting in the socket
    const auto oldest = outbound_.OldestUnanswered();
    if (oldest && std::chrono::steady_clock::now() - oldest->since >= opts_.ack_timeout) {
      EndConnection(
          fmt::format("packet id {} not acknowledged within {} ms; reconnecting to send "
                      "it again",
                      oldest->packet_id, opts_.ack_timeout.count()));
      break;
    }
  }
}

void Client::EndConnection(std::string why) {
  if (end_reason_.empty()) end_reason_ = std::move(why);
  CloseSocket();
}

Status Client::HandlePacket(Packet& packet, bool* refused) {
  if (auto* pub = std::get_if<Publish>(&packet)) {
    if (stopped_) return Status::Ok();  // not acknowledged: the broker redelivers later
    uint64_t token = 0;
    if (pub->qos > 0) {
      uint16_t id = pub->packet_id;
      if (pub->qos == 2 && awaiting_rel_.Get(id) != 0) {
        Send(PubResponse{.type = PacketType::kPubrec, .packet_id = id});
        return Status::Ok();
      }
      if (acked_.Get(id) != 0) return Status::Ok();  // redelivery of a message we still hold
      if (opts_.version == Version::kV5 && inbound_.size() >= opts_.receive_maximum &&
          !warned_receive_maximum_) {
        // The spec's answer would be DISCONNECT 0x93, but mosquitto 2.0.11 does this under
        // backpressure (the interop backpressure test saw 201 unacknowledged with a limit of
        // 100): disconnecting would stall a real deployment in a loop. So it is reported
        // once per connection and tolerated; what we hold stays bounded by the 65,535 packet
        // ids (acked_, inbound_).
        warned_receive_maximum_ = true;
        SEEDANCE_LOG_WARN(opts_.log_name,
                          "the broker sent more than receive_maximum ({}) unacknowledged "
                          "messages (a protocol violation; tolerated)",
                          opts_.receive_maximum);
      }
      acked_.Set(id, 1);
      const uint64_t serial = ++rx_serial_;
      inbound_.push_back(Inbound{id, pub->qos, serial});
      // An acknowledgement of this id waiting for confirmation is not confirmed by its
      // PINGRESP: the id is in use again.
      if (auto it = latest_serial_.find(id); it != latest_serial_.end()) it->second = serial;
      token = (generation_ << 16) | id;
    }
    if (!on_message_(*pub, token, reader_.invalid())) {
      refused_ = std::move(*pub);
      refused_token_ = token;
      refused_invalid_ = reader_.invalid();
      *refused = true;
    }
    return Status::Ok();
  }
  if (auto* r = std::get_if<PubResponse>(&packet)) {
    if (r->type == PacketType::kPubrel) {
      awaiting_rel_.Set(r->packet_id, 0);
      Send(PubResponse{.type = PacketType::kPubcomp, .packet_id = r->packet_id});
      return Status::Ok();
    }
    if (r->packet_id == 0) {
      return UnavailableError(
          fmt::format("protocol error: broker sent {} with packet id 0", PacketTypeName(r->type)));
    }
    std::vector<OutboundSession::ToSend> send;
    std::vector<OutboundSession::Completion> done;
    std::string error;
    switch (outbound_.OnResponse(*r, &send, &done, &error)) {
      case OutboundSession::Answer::kTaken:
        break;
      case OutboundSession::Answer::kNotInFlight:
        // A repeat, or the broker's mistake: it completes nothing. A message it should have
        // answered is timed out (ack_timeout).
        if (!warned_not_in_flight_) {
          warned_not_in_flight_ = true;
          SEEDANCE_LOG_WARN(opts_.log_name,
                            "broker sent {} for packet id {}, which is not in flight (ignored; "
                            "logged once per connection)",
                            PacketTypeName(r->type), r->packet_id);
        }
        break;
      case OutboundSession::Answer::kProtocolError:
        return UnavailableError("protocol error: " + error);
    }
    SendOutbound(send, done);
    return Status::Ok();
  }
  if (auto* s = std::get_if<Suback>(&packet)) {
    const bool ours = s->packet_id == subscribe_id_;
    if (ours) {
      outbound_.ReleaseId(subscribe_id_);
      subscribe_id_ = 0;
    }
    // Connected without the subscription would receive nothing for ever: a refusal fails the
    // connection, retried with backoff (and logged once per outage).
    for (size_t i = 0; i < s->reasons.size(); ++i) {
      if (s->reasons[i] >= 0x80) {
        std::string filter = i < opts_.subscriptions.size() ? opts_.subscriptions[i].filter : "?";
        return UnavailableError(fmt::format("broker refused subscription to \"{}\" (0x{:02x} {})",
                                            filter, s->reasons[i],
                                            SubackReasonText(s->reasons[i])));
      }
    }
    if (ours && !connected_detail_.empty()) {
      suback_timer_.cancel();
      SetState(ClientState::kConnected, connected_detail_);
      connected_detail_.clear();
    }
    return Status::Ok();
  }
  if (auto* u = std::get_if<Unsuback>(&packet)) {
    if (u->packet_id != unsubscribe_id_ || unsubscribe_id_ == 0) {
      return UnavailableError(fmt::format(
          "broker sent UNSUBACK for packet id {}, which is not in flight", u->packet_id));
    }
    outbound_.ReleaseId(unsubscribe_id_);
    unsubscribe_id_ = 0;
    // 0x11 (no subscription existed) is what a session without them answers: fine. Another
    // refusal leaves the filter in the session; it is tried again at the next connection.
    // One line per UNSUBACK, whatever number of reasons the broker sent; those past the
    // packet's filters are not ours.
    const size_t sent = unsubscribe_next_ - unsubscribe_first_;
    size_t refusals = 0, first = 0;
    for (size_t i = 0; i < std::min(u->reasons.size(), sent); ++i) {
      if (u->reasons[i] >= 0x80 && refusals++ == 0) first = i;
    }
    if (refusals > 0) {
      unsubscribe_refused_ = true;
      SEEDANCE_LOG_WARN(opts_.log_name,
                        "broker refused to remove the subscription to \"{}\" (0x{:02x}){}, "
                        "which the configuration no longer names; its messages still arrive",
                        util::SanitizeText(opts_.unsubscribe[unsubscribe_first_ + first], 200),
                        u->reasons[first],
                        refusals > 1 ? fmt::format(" and to {} more", refusals - 1) : "");
    }
    SendNextUnsubscribe();
    return Status::Ok();
  }
  if (std::holds_alternative<PingResp>(packet)) {
    OnPingResp();
    return Status::Ok();
  }
  if (auto* d = std::get_if<Disconnect>(&packet)) {
    const Property* why = FindProperty(d->props, prop::kReasonString);
    return UnavailableError(fmt::format("broker sent DISCONNECT (0x{:02x} {}{}{})", d->reason,
                                        DisconnectReasonText(d->reason), why ? ": " : "",
                                        why ? why->text.substr(0, 256) : ""));
  }
  return UnavailableError(fmt::format("unexpected {} from broker", PacketTypeName(TypeOf(packet))));
}

void Client::AckOnLoop(uint64_t token) {
  const uint64_t generation = token >> 16;
  const auto id = static_cast<uint16_t>(token & 0xFFFF);
  if (generation != generation_ || !IsOpen() || acked_.Get(id) != 1) return;
  acked_.Set(id, 2);
  while (!inbound_.empty() && acked_.Get(inbound_.front().packet_id) == 2) {
    Inbound in = inbound_.front();
    inbound_.pop_front();
    acked_.Set(in.packet_id, 0);
    if (on_confirmed_) {
      acked_unpinged_.push_back(Acked{in.packet_id, in.serial});
      latest_serial_[in.packet_id] = in.serial;
    }
    if (in.qos == 2) {
      awaiting_rel_.Set(in.packet_id, 1);
      Queue(PubResponse{.type = PacketType::kPubrec, .packet_id = in.packet_id});
    } else {
      Queue(PubResponse{.type = PacketType::kPuback, .packet_id = in.packet_id});
    }
  }
}

void Client::SendNextUnsubscribe() {
  const std::vector<std::string>& filters = opts_.unsubscribe;
  // Fixed header (at most 5 bytes for these sizes), packet id, MQTT 5's empty properties.
  constexpr size_t kOverhead = 5 + 2 + 1;
  const size_t limit = broker_max_packet_ == 0
                           ? kMaxUnsubscribePacket
                           : std::min<size_t>(kMaxUnsubscribePacket, broker_max_packet_);
  Unsubscribe unsub;
  size_t bytes = kOverhead, too_large = 0;
  const std::string* first_too_large = nullptr;
  while (unsubscribe_next_ < filters.size()) {
    const std::string& f = filters[unsubscribe_next_];
    if (bytes + 2 + f.size() > limit) {
      if (!unsub.filters.empty()) break;
      // Alone over the limit: it cannot be sent, and sending it would end every connection.
      if (too_large++ == 0) first_too_large = &f;
      ++unsubscribe_next_;
      continue;
    }
    if (unsub.filters.empty()) unsubscribe_first_ = unsubscribe_next_;
    unsub.filters.push_back(f);
    bytes += 2 + f.size();
    ++unsubscribe_next_;
  }
  if (too_large > 0) {
    SEEDANCE_LOG_WARN(opts_.log_name,
                      "cannot remove {} subscription(s) the configuration no longer names, "
                      "\"{}\" first: an UNSUBSCRIBE for one is larger than the broker's maximum "
                      "packet size ({} bytes); their messages still arrive (a session started with "
                      "clean_start: true has none of them)",
                      too_large, util::SanitizeText(*first_too_large, 200), limit);
  }
  if (unsub.filters.empty()) {
    if (!unsubscribe_refused_ && on_settled_) on_settled_();
    return;
  }
  unsub.packet_id = unsubscribe_id_ = outbound_.ReserveId();
  Send(unsub);
}

void Client::Send(const Packet& packet) {
  if (Queue(packet)) FlushWrites();
}

bool Client::Queue(const Packet& packet) {
  Status s = Encode(packet, opts_.version, tx_pending_);
  if (!s.ok()) {
    SetState(state_,
             "cannot encode " + std::string(PacketTypeName(TypeOf(packet))) + ": " + s.message());
    return false;
  }
  return true;
}

void Client::FlushWrites() {
  if (writing_ || tx_pending_.empty() || !IsOpen()) return;
  writing_ = true;
  if (!tx_writing_ || tx_writing_.use_count() > 1) tx_writing_ = std::make_shared<std::string>();
  auto buffer = tx_writing_;
  buffer->swap(tx_pending_);  // both keep their storage
  tx_pending_.clear();
  auto done = [self = shared_from_this(), buffer, conn = conn_, generation = generation_](
                  error_code ec, size_t) mutable {
    buffer.reset();                   // written: the next FlushWrites may reuse it
    if (conn != self->conn_) return;  // a write on an earlier connection
    self->writing_ = false;
    if (ec) {
      self->CloseSocket();
      return;
    }
    self->FlushWrites();
  };
  // One write at a time: its operations' memory is write_slot_.
  util::SlotHandler<decltype(done)> handler{write_slot_, std::move(done)};
  conn_->AsyncWrite(asio::buffer(*buffer), std::move(handler));
}

}  // namespace seedance::mqtt
