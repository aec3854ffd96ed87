#include "mqtt/client.h"

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <optional>

#include "mqtt/codec.h"
#include "mqtt/read_pacer.h"
#include "util/log.h"
#include "util/scratch_buffer.h"
#include "util/strings.h"
#include "util/tls_files.h"

namespace seedance::mqtt {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

std::string ConnackReasonText(Version v, uint8_t code) {
  if (v == Version::kV311) {
    switch (code) {
      case 1:
        return "unacceptable protocol version";
      case 2:
        return "client identifier rejected";
      case 3:
        return "server unavailable";
      case 4:
        return "bad user name or password";
      case 5:
        return "not authorized";
    }
  } else {
    switch (code) {
      case 0x84:
        return "unsupported protocol version";
      case 0x85:
        return "client identifier not valid";
      case 0x86:
        return "bad user name or password";
      case 0x87:
        return "not authorized";
      case 0x88:
        return "server unavailable";
      case 0x89:
        return "server busy";
      case 0x8A:
        return "banned";
    }
  }
  return fmt::format("reason code 0x{:02x}", code);
}

// MQTT 5 DISCONNECT reason codes a broker sends (§3.14.2.1).
std::string DisconnectReasonText(uint8_t code) {
  switch (code) {
    case 0x00:
      return "normal disconnection";
    case 0x80:
      return "unspecified error";
    case 0x81:
      return "malformed packet";
    case 0x82:
      return "protocol error";
    case 0x83:
      return "implementation specific error";
    case 0x87:
      return "not authorized";
    case 0x89:
      return "server busy";
    case 0x8B:
      return "server shutting down";
    case 0x8D:
      return "keep alive timeout";
    case 0x8E:
      return "session taken over (another client connected with this client_id)";
    case 0x8F:
      return "topic filter invalid";
    case 0x93:
      return "receive maximum exceeded";
    case 0x94:
      return "topic alias invalid";
    case 0x95:
      return "packet too large";
    case 0x96:
      return "message rate too high";
    case 0x97:
      return "quota exceeded";
    case 0x98:
      return "administrative action";
    case 0x9C:
      return "use another server";
    case 0x9D:
      return "server moved";
    case 0x9F:
      return "connection rate exceeded";
  }
  return "reason code";
}

std::string SubackReasonText(uint8_t code) {
  switch (code) {
    case 0x80:
      return "unspecified error";
    case 0x83:
      return "implementation specific error";
    case 0x87:
      return "not authorized";
    case 0x8F:
      return "topic filter invalid";
    case 0x91:
      return "packet identifier in use";
    case 0x97:
      return "quota exceeded";
    case 0x9E:
      return "shared subscriptions not supported";
    case 0xA1:
      return "subscription identifiers not supported";
    case 0xA2:
      return "wildcard subscriptions not supported";
  }
  return "refused";
}

bool ValidTopicName(std::string_view topic) {
  if (topic.find('\0') != std::string_view::npos) return false;
  if (topic.find_first_of("+#") != std::string_view::npos) return false;
  return util::IsValidUtf8(topic);
}

}  // namespace

const char* ClientStateName(ClientState s) {
  switch (s) {
    case ClientState::kConnecting:
      return "connecting";
    case ClientState::kConnected:
      return "connected";
    case ClientState::kDisconnected:
      return "disconnected";
    case ClientState::kStopped:
      return "stopped";
  }
  return "?";
}

Client::Client(asio::io_context& io, ClientOptions options, MessageHandler on_message,
               StateHandler on_state)
    : io_(io),
      opts_(std::move(options)),
      on_message_(std::move(on_message)),
      on_state_(std::move(on_state)),
      resume_timer_(io),
      read_linger_timer_(io),
      outbound_(opts_.max_publish_in_flight),
      suback_timer_(io),
      confirm_timer_(io) {}

Client::~Client() = default;

void Client::Start() {
  ack_signal_ = std::make_unique<util::LoopSignal>(io_, [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->DrainAcks();
  });
  asio::co_spawn(io_, Run(shared_from_this()), asio::detached);
}

void Client::Acknowledge(uint64_t token) {
  {
    std::lock_guard<std::mutex> lock(ack_mu_);
    ack_inbox_.push_back(token);
  }
  ack_signal_->Notify();
}

void Client::DrainAcks() {
  {
    std::lock_guard<std::mutex> lock(ack_mu_);
    ack_draining_.swap(ack_inbox_);
  }
  for (uint64_t token : ack_draining_) AckOnLoop(token);
  ack_draining_.clear();
  FlushWrites();  // every acknowledgement of the batch in one write
  ScheduleConfirmation();
}

void Client::ScheduleConfirmation() {
  if (!on_confirmed_ || acked_unpinged_.empty() || confirm_armed_ || !pings_.empty()) return;
  confirm_armed_ = true;
  confirm_timer_.expires_after(kConfirmAfter);
  confirm_timer_.async_wait(
      [weak = weak_from_this(), generation = generation_](boost::system::error_code ec) {
        auto self = weak.lock();
        if (!self) return;
        self->confirm_armed_ = false;
        if (ec || generation != self->generation_ || !self->IsOpen()) return;
        if (!self->acked_unpinged_.empty() && self->pings_.empty()) self->SendPing();
      });
}

void Client::SendPing() {
  if (on_confirmed_) {
    pings_.push_back(std::move(acked_unpinged_));
    acked_unpinged_.clear();
  }
  Send(PingReq{});
}

void Client::OnPingResp() {
  if (pings_.empty()) return;  // a broker's extra PINGRESP confirms nothing
  std::vector<Acked> acked = std::move(pings_.front());
  pings_.pop_front();
  std::vector<uint16_t> confirmed;
  confirmed.reserve(acked.size());
  for (const Acked& a : acked) {
    auto it = latest_serial_.find(a.packet_id);
    if (it == latest_serial_.end() || it->second != a.serial) continue;  // arrived again since
    latest_serial_.erase(it);
    confirmed.push_back(a.packet_id);
  }
  if (!confirmed.empty()) on_confirmed_(confirmed);
  ScheduleConfirmation();
}

void Client::PublishMessage(mqtt::Publish message, uint64_t tag) {
  // What cannot be encoded would never complete: refused here, with the reason.
  std::string unsendable;
  if (message.topic.empty() || message.topic.size() > 65535) {
    unsendable = "the topic is empty or longer than 65535 bytes";
  }
  for (const Property& p : message.props) {
    if (p.text.size() > 65535 || p.value.size() > 65535) {
      unsendable = "an MQTT 5 property is longer than 65535 bytes";
    }
  }
  if (!unsendable.empty()) {
    if (on_published_) on_published_({tag, 0x83, unsendable});
    return;
  }
  if (broker_max_packet_ != 0) {
    size_t props = 0;
    for (const Property& p : message.props) props += 8 + p.text.size() + p.value.size();
    if (message.topic.size() + message.payload.size() + props + 16 > broker_max_packet_) {
      if (on_published_) {
        on_published_(
            {tag, 0x95,
             fmt::format("message of {} bytes exceeds the broker's maximum packet size "
                         "({} bytes)",
                         message.topic.size() + message.payload.size(), broker_max_packet_)});
      }
      return;
    }
  }
  outbound_.Enqueue(std::move(message), tag);
  if (state_ != ClientState::kConnected || !IsOpen()) return;
  std::vector<OutboundSession::ToSend> send;
  std::vector<OutboundSession::Completion> done;
  outbound_.Pump(&send, &done);
  SendOutbound(send, done);
}

void Client::SendOutbound(std::vector<OutboundSession::ToSend>& send,
                          std::vector<OutboundSession::Completion>& done) {
  for (const OutboundSession::ToSend& t : send) {
    Status s = t.publish
                   ? EncodePublish(*t.publish, opts_.version, tx_pending_)
                   : Encode(PubResponse{.type = PacketType::kPubrel, .packet_id = t.pubrel_id},
                            opts_.version, tx_pending_);
    if (!s.ok()) SetState(state_, "cannot encode a message: " + s.message());
  }
  FlushWrites();
  if (on_published_) {
    for (const auto& c : done) on_published_(c);
  }
}

void Client::Resume() {
  asio::post(io_, [self = shared_from_this()] {
    self->resume_pending_ = true;
    self->resume_timer_.cancel();
  });
}

void Client::Stop() {
  stopped_ = true;
  resume_timer_.cancel();
  read_linger_timer_.cancel();
}

void Client::Close() {
  stopped_ = true;
  closed_ = true;
  resume_timer_.cancel();
  read_linger_timer_.cancel();
  if (IsOpen() && !writing_) {
    std::string bytes = std::move(tx_pending_);
    tx_pending_.clear();
    Encode(Disconnect{}, opts_.version, bytes).IgnoreError();
    error_code ec;
    if (tls_)
      asio::write(*tls_, asio::buffer(bytes), ec);
    else
      asio::write(*socket_, asio::buffer(bytes), ec);
  }
  CloseSocket();
  SetState(ClientState::kStopped, "closed");
}

bool Client::IsOpen() const { return socket_ && socket_->is_open(); }

void Client::CloseSocket() {
  if (!socket_) return;
  error_code ec;
  socket_->shutdown(tcp::socket::shutdown_both, ec);
  socket_->close(ec);
}

void Client::SetState(ClientState s, const std::string& detail) {
  state_ = s;
  // Attempts in between are not news: a broker that keeps refusing for the same reason is
  // reported once, not on every retry.
  if (s == ClientState::kConnecting) return;
  if (s == reported_state_ && detail == last_detail_) return;
  reported_state_ = s;
  last_detail_ = detail;
  // Within an outage (connections that do not last), each reason and the reconnect are news
  // once: a broker that accepts and drops every connection costs two log lines, not two per
  // cycle.
  bool news = true;
  if (in_outage_ && s != ClientState::kStopped) {
    const std::string key = std::string(ClientStateName(s)) + ":" + detail;
    if (std::find(outage_news_.begin(), outage_news_.end(), key) != outage_news_.end()) {
      news = false;
    } else if (outage_news_.size() < 32) {
      outage_news_.push_back(key);
    }
  }
  if (on_state_) on_state_(s, detail, news);
}

awaitable<void> Client::Run([[maybe_unused]] std::shared_ptr<Client> self) {
  auto backoff = opts_.reconnect_min;
  while (!stopped_) {
    Status s = co_await ConnectOnce();
    if (s.ok()) {
      s = co_await ReadLoop();
      if (!end_reason_.empty()) s = UnavailableError(std::move(end_reason_));
      end_reason_.clear();
      if (std::chrono::steady_clock::now() - connected_at_ >= kStableAfter) {
        // It was up long enough: a new problem, not more of the old one.
        backoff = opts_.reconnect_min;
        in_outage_ = false;
        outage_news_.clear();
      }
    }
    CloseSocket();
    outbound_.Disconnected();
    last_error_ = s.message();
    if (stopped_) break;
    if (!in_outage_) {
      in_outage_ = true;
      outage_news_.clear();
    }
    SetState(ClientState::kDisconnected, s.message());
    // Capped exponential backoff with jitter in [backoff/2, backoff].
    auto ms = backoff.count();
    std::uniform_int_distribution<long long> jitter(ms / 2, std::max<long long>(ms, 1));
    asio::steady_timer timer(io_, std::chrono::milliseconds(jitter(rng_)));
    error_code ec;
    co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
    backoff = std::min(opts_.reconnect_max, backoff * 2);
  }
  if (!closed_) SetState(ClientState::kStopped, "stopped");
}

awaitable<Status> Client::ConnectOnce() {
  SetState(ClientState::kConnecting, "");
  error_code ec;
  tcp::resolver resolver(io_);
  auto endpoints = co_await resolver.async_resolve(opts_.host, std::to_string(opts_.port),
                                                   asio::redirect_error(use_awaitable, ec));
  if (ec)
    co_return UnavailableError(fmt::format("cannot resolve {}: {}", opts_.host, ec.message()));

  socket_ = std::make_shared<tcp::socket>(io_);
  tls_.reset();
  rx_.clear();
  rx_pos_ = 0;
  tx_pending_.clear();
  writing_ = false;
  // Closes the socket if connecting, the TLS handshake or CONNACK take too long.
  asio::steady_timer watchdog(io_, opts_.connect_timeout);
  std::weak_ptr<tcp::socket> weak_socket = socket_;
  watchdog.async_wait([weak_socket](error_code e) {
    if (e) return;
    if (auto s = weak_socket.lock()) {
      error_code ignored;
      s->close(ignored);
    }
  });
  const std::string where = fmt::format("{}:{}", opts_.host, opts_.port);
  co_await asio::async_connect(*socket_, endpoints, asio::redirect_error(use_awaitable, ec));
  if (ec) co_return UnavailableError(fmt::format("cannot connect to {}: {}", where, ec.message()));
  socket_->set_option(tcp::no_delay(true), ec);
  socket_->non_blocking(true, ec);  // ReadLoop's read after a linger must not block

  if (opts_.tls.enabled) {
    if (!ssl_ctx_) {
      auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
      if (Status s = util::LoadCaFile(*ctx, opts_.tls.ca_file); !s.ok()) co_return s;
      if (!opts_.tls.cert_file.empty()) {
        Status s = util::LoadCertificate(*ctx, opts_.tls.cert_file, opts_.tls.key_file);
        if (!s.ok()) co_return s;
      }
      ssl_ctx_ = std::move(ctx);
    }
    tls_ = std::make_shared<asio::ssl::stream<tcp::socket&>>(*socket_, *ssl_ctx_);
    const std::string& name = opts_.tls.server_name.empty() ? opts_.host : opts_.tls.server_name;
    SSL_set_tlsext_host_name(tls_->native_handle(), name.c_str());
    if (opts_.tls.verify) {
      tls_->set_verify_mode(asio::ssl::verify_peer);
      tls_->set_verify_callback(asio::ssl::host_name_verification(name));
    } else {
      tls_->set_verify_mode(asio::ssl::verify_none);
    }
    co_await tls_->async_handshake(asio::ssl::stream_base::client,
                                   asio::redirect_error(use_awaitable, ec));
    if (ec)
      co_return UnavailableError(fmt::format("TLS handshake with {}: {}", where, ec.message()));
  }

  Connect c;
  c.version = opts_.version;
  c.client_id = opts_.client_id;
  c.clean_start = opts_.clean_start;
  c.keep_alive_s = opts_.keep_alive_s;
  c.username = opts_.username;
  c.password = opts_.password;
  if (opts_.version == Version::kV5) {
    if (opts_.session_expiry_s > 0)
      c.props.push_back({.id = prop::kSessionExpiry, .number = opts_.session_expiry_s});
    c.props.push_back({.id = prop::kReceiveMaximum, .number = opts_.receive_maximum});
    c.props.push_back(
        {.id = prop::kMaximumPacketSize, .number = static_cast<uint32_t>(opts_.max_packet_size)});
  }
  Send(c);
  Result<Packet> reply = co_await ReadPacket();
  watchdog.cancel();
  if (!reply)
    co_return reply.error().WithContext(fmt::format("waiting for CONNACK from {}", where));
  auto* connack = std::get_if<Connack>(&*reply);
  if (connack == nullptr) {
    co_return UnavailableError(
        fmt::format("{} answered CONNECT with {}", where, PacketTypeName(TypeOf(*reply))));
  }
  if (connack->reason != 0) {
    co_return UnavailableError(fmt::format("{} refused the connection: {}", where,
                                           ConnackReasonText(opts_.version, connack->reason)));
  }
  keep_alive_s_ = opts_.keep_alive_s;
  if (const Property* p = FindProperty(connack->props, prop::kServerKeepAlive)) {
    keep_alive_s_ = static_cast<uint16_t>(p->number);
  }
  ++generation_;
  ++connects_;
  connected_at_ = std::chrono::steady_clock::now();
  skip_bytes_ = 0;
  warned_receive_maximum_ = false;
  warned_not_in_flight_ = false;
  end_reason_.clear();
  inbound_.clear();
  acked_.Clear();
  last_rx_ = std::chrono::steady_clock::now();
  session_present_ = connack->session_present;
  // Acknowledgements of an earlier connection that were not confirmed may have been lost.
  acked_unpinged_.clear();
  pings_.clear();
  latest_serial_.clear();

  uint32_t broker_receive_maximum = 65535;
  broker_max_packet_ = 0;
  if (const Property* p = FindProperty(connack->props, prop::kReceiveMaximum)) {
    broker_receive_maximum = p->number;
  }
  if (const Property* p = FindProperty(connack->props, prop::kMaximumPacketSize)) {
    broker_max_packet_ = p->number;
  }
  if (!opts_.subscriptions.empty()) {
    if (subscribe_id_ != 0) outbound_.ReleaseId(subscribe_id_);
    Subscribe sub;
    sub.packet_id = subscribe_id_ = outbound_.ReserveId();
    sub.subscriptions = opts_.subscriptions;
    Send(sub);
  }
  last_error_.clear();
  const std::string detail =
      fmt::format("{} (MQTT {}, session {})", where, opts_.version == Version::kV5 ? "5" : "3.1.1",
                  connack->session_present ? "resumed" : "new");
  // With subscriptions, connected means subscribed: the state (and its log line) waits for the
  // SUBACK, so what is published after it reaches us.
  if (opts_.subscriptions.empty()) {
    SetState(ClientState::kConnected, detail);
  } else {
    // A broker that never answers SUBSCRIBE would leave us connected to nothing, silently.
    connected_detail_ = detail;
    suback_timer_.expires_after(opts_.connect_timeout);
    suback_timer_.async_wait(
        [weak = weak_from_this(), generation = generation_](boost::system::error_code ec) {
          auto self = weak.lock();
          if (ec || !self || generation != self->generation_ || self->connected_detail_.empty()) {
            return;
          }
          self->EndConnection(fmt::format("{}:{} granted no subscription (no SUBACK) within {} ms",
                                          self->opts_.host, self->opts_.port,
                                          self->opts_.connect_timeout.count()));
        });
  }
  {
    // Messages in flight first (sent again), then the queue.
    std::vector<OutboundSession::ToSend> send;
    std::vector<OutboundSession::Completion> done;
    outbound_.Connected(connack->session_present, broker_receive_maximum, &send, &done);
    SendOutbound(send, done);
  }
  co_return Status::Ok();
}

Result<bool> Client::TakeBufferedPacket() {
  rx_invalid_.clear();
  std::string_view avail(rx_.data() + rx_pos_, rx_.size() - rx_pos_);
  auto frame = PeekFrame(avail, opts_.max_packet_size);
  const bool is_publish =
      !avail.empty() &&
      static_cast<PacketType>(static_cast<uint8_t>(avail[0]) >> 4) == PacketType::kPublish;
  size_t consumed = 0;
  if (!frame && frame.error().code() == StatusCode::kResourceExhausted && is_publish) {
    // Too large to take: read its head, skip the rest as it arrives (never buffered), and
    // hand it on as a message that cannot be taken, so it is acknowledged, not redelivered
    // for ever (MQTT 3.1.1 cannot tell the broker our limit).
    auto fixed = PeekFixedHeader(avail);
    if (!fixed) return fixed.error();
    const FrameInfo f = **fixed;
    auto head = PeekPublishHead(f.first_byte, avail.substr(f.header_size));
    if (!head) return head.error();
    if (!head->has_value()) return false;  // the topic is still coming (at most 64 KiB)
    consumed = std::min(avail.size(), f.total());
    skip_bytes_ = f.total() - consumed;
    if (!std::holds_alternative<Publish>(rx_packet_)) rx_packet_ = Publish{};
    Publish& pub = std::get<Publish>(rx_packet_);
    pub.topic = std::move((*head)->topic);
    pub.qos = (*head)->qos;
    pub.packet_id = (*head)->packet_id;
    pub.payload.clear();
    pub.props.clear();
    pub.dup = (f.first_byte & 0x08) != 0;
    pub.retain = (f.first_byte & 1) != 0;
    rx_invalid_ = fmt::format("message of {} bytes exceeds max_packet_size ({} bytes)", f.total(),
                              opts_.max_packet_size);
  } else {
    if (!frame) return frame.error();
    if (!frame->has_value()) return false;
    const FrameInfo& f = **frame;
    const std::string_view body = avail.substr(f.header_size, f.remaining);
    Status decoded;
    if (is_publish) {
      // Into the Publish already there: its strings keep their storage from packet to packet.
      if (!std::holds_alternative<Publish>(rx_packet_)) rx_packet_ = Publish{};
      Publish& pub = std::get<Publish>(rx_packet_);
      decoded = DecodePublishInto(f.first_byte, body, opts_.version, &pub);
      if (!decoded.ok()) {
        // Undecodable, but with a readable head: one bad message, acknowledged and reported.
        auto head = PeekPublishHead(f.first_byte, body);
        if (head && head->has_value()) {
          pub.topic = std::move((*head)->topic);
          pub.qos = (*head)->qos;
          pub.packet_id = (*head)->packet_id;
          pub.payload.clear();
          pub.props.clear();
          rx_invalid_ = decoded.message();
          decoded = Status::Ok();
        }
      } else {
        rx_invalid_ = CheckPublish(pub);
        if (!rx_invalid_.empty()) pub.payload.clear();
      }
    } else {
      Result<Packet> p = Decode(f.first_byte, body, opts_.version);
      if (p)
        rx_packet_ = std::move(*p);
      else
        decoded = p.error();
    }
    consumed = f.total();
    if (!decoded.ok()) return decoded;
  }
  rx_pos_ += consumed;
  if (rx_pos_ == rx_.size()) {
    rx_.clear();
    rx_pos_ = 0;
    util::ReleaseIfLarger(rx_);  // a large packet's bytes are in rx_packet_ now
  } else if (rx_pos_ > 65536) {
    rx_.erase(0, rx_pos_);
    rx_pos_ = 0;
    util::ReleaseIfLarger(rx_);
  }
  last_rx_ = std::chrono::steady_clock::now();
  return true;
}

std::string Client::CheckPublish(const Publish& p) const {
  if (p.topic.empty()) {
    if (FindProperty(p.props, prop::kTopicAlias) != nullptr) {
      return "PUBLISH uses a topic alias, which was never negotiated (Seedance allows none)";
    }
    return "PUBLISH without a topic name";
  }
  if (!ValidTopicName(p.topic)) {
    return "topic name is not valid UTF-8, or holds U+0000 or a wildcard";
  }
  return std::string();
}

Status Client::Received(error_code ec, size_t n) {
  if (ec) {
    return UnavailableError(ec == asio::error::eof ? std::string("broker closed the connection")
                                                   : "connection lost: " + ec.message());
  }
  const size_t skipped = std::min(n, skip_bytes_);
  skip_bytes_ -= skipped;
  rx_.append(read_buffer_.data() + skipped, n - skipped);
  return Status::Ok();
}

awaitable<Result<Packet>> Client::ReadPacket() {
  while (true) {
    Result<bool> taken = TakeBufferedPacket();
    if (!taken) co_return taken.error();
    if (*taken) co_return std::move(rx_packet_);
    if (!IsOpen()) co_return UnavailableError("connection closed");
    error_code ec;
    const size_t n = tls_
                         ? co_await tls_->async_read_some(asio::buffer(read_buffer_),
                                                          asio::redirect_error(use_awaitable, ec))
                         : co_await socket_->async_read_some(
                               asio::buffer(read_buffer_), asio::redirect_error(use_awaitable, ec));
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
        RequestQuickAck();
        // Edge-triggered epoll would wake the loop for every message that arrives during the
        // linger; with the receive low-water mark at a buffer's worth the kernel wakes it only
        // for that much. Setting it back to 1 signals what is there (the read below takes it).
        SetReceiveLowWatermark(read_buffer_.size());
        read_linger_timer_.expires_after(pacer.Linger());
        co_await read_linger_timer_.async_wait(asio::redirect_error(use_awaitable, ec));
        SetReceiveLowWatermark(1);
        if (stopped_ || !IsOpen()) continue;
        ec.clear();
      }
      size_t n = 0;
      bool read = false;
      bool lingered_data = false;  // what this read takes arrived during the linger
      if (linger_start && !tls_) {
        // After a linger the data is usually there: a non-blocking read takes it without an
        // asynchronous operation, whose memory came from the heap each time (the timer's
        // recycled block is smaller than a read's).
        n = socket_->read_some(asio::buffer(read_buffer_), ec);
        read = ec != asio::error::would_block && ec != asio::error::try_again;
        if (!read) ec.clear();
        lingered_data = read;
      }
      if (!read) {
        const auto waiting_since = std::chrono::steady_clock::now();
        n = tls_ ? co_await tls_->async_read_some(asio::buffer(read_buffer_),
                                                  asio::redirect_error(use_awaitable, ec))
                 : co_await socket_->async_read_some(asio::buffer(read_buffer_),
                                                     asio::redirect_error(use_awaitable, ec));
        // Over TLS the linger's data is read here, at once; a read that had to wait took
        // something that arrived after the linger (dated now, not from the linger's start).
        lingered_data =
            linger_start && tls_ && std::chrono::steady_clock::now() - waiting_since < kReadAtOnce;
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
    Status s = HandlePacket(rx_packet_, &refused);
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
    if (!on_message_(*pub, token, rx_invalid_)) {
      refused_ = std::move(*pub);
      refused_token_ = token;
      refused_invalid_ = rx_invalid_;
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

void Client::RequestQuickAck() {
  if (!socket_) return;
  int one = 1;  // a failure only costs latency
  ::setsockopt(socket_->native_handle(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one);
}

void Client::SetReceiveLowWatermark(size_t bytes) {
  if (!socket_) return;
  error_code ec;  // a failure only costs wake-ups
  socket_->set_option(asio::socket_base::receive_low_watermark(static_cast<int>(bytes)), ec);
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
  auto done = [self = shared_from_this(), buffer, socket = socket_, tls = tls_,
               generation = generation_](error_code ec, size_t) mutable {
    buffer.reset();                       // written: the next FlushWrites may reuse it
    if (socket != self->socket_) return;  // a write on an earlier connection
    self->writing_ = false;
    if (ec) {
      self->CloseSocket();
      return;
    }
    self->FlushWrites();
  };
  // One write at a time: its operations' memory is write_slot_.
  util::SlotHandler<decltype(done)> handler{write_slot_, std::move(done)};
  if (tls_)
    asio::async_write(*tls_, asio::buffer(*buffer), std::move(handler));
  else
    asio::async_write(*socket_, asio::buffer(*buffer), std::move(handler));
}

}  // namespace seedance::mqtt
