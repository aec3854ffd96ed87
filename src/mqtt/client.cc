#include "mqtt/client.h"

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <optional>

#include "mqtt/codec.h"
#include "mqtt/read_pacer.h"
#include "mqtt/reason_codes.h"
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
    conn_->WriteNow(bytes, ec);
  }
  CloseSocket();
  SetState(ClientState::kStopped, "closed");
}

bool Client::IsOpen() const { return conn_ && conn_->IsOpen(); }

void Client::CloseSocket() {
  if (conn_) conn_->Close();
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

  conn_ = std::make_shared<Transport>(io_);
  reader_.Reset();
  tx_pending_.clear();
  writing_ = false;
  // Closes the socket if connecting, the TLS handshake or CONNACK take too long.
  asio::steady_timer watchdog(io_, opts_.connect_timeout);
  std::weak_ptr<Transport> weak_conn = conn_;
  watchdog.async_wait([weak_conn](error_code e) {
    if (e) return;
    if (auto conn = weak_conn.lock()) conn->Close();
  });
  const std::string where = fmt::format("{}:{}", opts_.host, opts_.port);
  co_await asio::async_connect(conn_->socket(), endpoints, asio::redirect_error(use_awaitable, ec));
  if (ec) co_return UnavailableError(fmt::format("cannot connect to {}: {}", where, ec.message()));
  conn_->socket().set_option(tcp::no_delay(true), ec);
  conn_->socket().non_blocking(true, ec);  // ReadLoop's read after a linger must not block

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
    const std::string& name = opts_.tls.server_name.empty() ? opts_.host : opts_.tls.server_name;
    co_await conn_->UseTls(*ssl_ctx_, name, opts_.tls.verify)
        .async_handshake(asio::ssl::stream_base::client, asio::redirect_error(use_awaitable, ec));
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
  Subscribe sub;
  sub.subscriptions = opts_.subscriptions;
  if (const Property* p = FindProperty(connack->props, prop::kMaximumPacketSize);
      p != nullptr && !sub.subscriptions.empty()) {
    // A broker ends the connection on a bigger packet: say why instead, on every try.
    std::string encoded;
    if (Encode(sub, opts_.version, encoded).ok() && encoded.size() > p->number) {
      co_return InvalidArgumentError(fmt::format(
          "{} accepts packets of at most {} bytes, and the SUBSCRIBE for the configured topic "
          "filters is {} bytes: configure fewer or shorter filters, or raise the broker's limit",
          where, p->number, encoded.size()));
    }
  }
  keep_alive_s_ = opts_.keep_alive_s;
  if (const Property* p = FindProperty(connack->props, prop::kServerKeepAlive)) {
    keep_alive_s_ = static_cast<uint16_t>(p->number);
  }
  ++generation_;
  ++connects_;
  connected_at_ = std::chrono::steady_clock::now();
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
  if (!sub.subscriptions.empty()) {
    if (subscribe_id_ != 0) outbound_.ReleaseId(subscribe_id_);
    sub.packet_id = subscribe_id_ = outbound_.ReserveId();  // the size does not depend on it
    Send(sub);
  }
  if (unsubscribe_id_ != 0) outbound_.ReleaseId(unsubscribe_id_);
  unsubscribe_id_ = 0;
  unsubscribe_first_ = unsubscribe_next_ = connack->session_present ? 0 : opts_.unsubscribe.size();
  unsubscribe_refused_ = false;
  SendNextUnsubscribe();
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

}  // namespace seedance::mqtt
