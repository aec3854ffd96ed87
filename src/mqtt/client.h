// MQTT client session over Boost.Asio (TCP or TLS), protocol 3.1.1 or 5.0.
//
// Its layers: mqtt/transport (the byte stream, TCP or TLS), mqtt/packet_reader (bytes to
// packets, the oversize and invalid cases), mqtt/codec, mqtt/outbound (what we publish),
// mqtt/reason_codes (the broker's codes in words). The Client keeps the session and the
// reconnects: client.cc its life (start, stop, connect, reconnect), client_session.cc one
// connection's traffic (reading, keep-alive, acknowledgements, writes).
//
// What it does: connects, subscribes (when it has subscriptions), receives PUBLISH packets and
// hands them to the MessageHandler, publishes messages with QoS 0/1/2 (PublishMessage(): the
// exchange, flow control and resending after a reconnect are the OutboundSession's, each
// message's outcome goes to the PublishedHandler); keeps the connection alive (PINGREQ) and
// reconnects with capped exponential backoff and jitter, logging once per state change.
//
// Acknowledgement is the caller's decision: a QoS 1/2 message comes with a token, and the
// PUBACK (or PUBREC) is sent only when Acknowledge(token) is called. PUBACKs go out in the
// order the messages arrived (MQTT §4.6), however the acknowledgements are ordered. A token
// from before a reconnect is ignored: the broker redelivers that message.
//
// Flow control: the handler may refuse a message (returns false); the client then stops
// reading the socket until Resume(), and redelivers that message first. With MQTT 5 the
// broker also limits unacknowledged messages to `receive_maximum`; a broker that sends more
// is reported once per connection and tolerated (mosquitto 2.0.11 does it under
// backpressure; the spec's DISCONNECT 0x93 would stall a real deployment). What the client
// holds stays bounded by the 65,535 packet ids.
//
// A misbehaving broker costs one message, not the connection: a PUBLISH that cannot be taken
// (larger than max_packet_size — its bytes are skipped, never buffered — undecodable, no
// topic or an alias never negotiated, a topic with U+0000, wildcards or bad UTF-8) reaches
// the handler with `invalid` saying why, its topic if known and no payload, and is
// acknowledged like any other message once the handler's side has it.
//
// State: connected once the broker accepted the connection and, with subscriptions, granted
// them (SUBACK): what is published after that reaches us.
//
// Reconnects: the backoff doubles from reconnect_min to reconnect_max and resets only after
// a connection stayed up kStableAfter; a broker that accepts and then drops the connection
// gets no fast loop. During an outage (until a connection is stable again) each distinct
// reason is news once: the state handler's `news` flag says whether to log it.
//
// Answers to what we publish: a QoS 1/2 message in flight longer than `ack_timeout` without
// its answer (PUBACK, PUBREC, PUBCOMP) ends the connection ("packet id N not acknowledged
// within T ms"); the reconnect sends it again (MQTT forbids sending it again on the same
// connection), so a broker that drops answers costs a reconnect, never the publishing for good.
// The wrong answer for a message (a PUBREC for QoS 1, packet id 0) is a protocol error that
// ends the connection too; an answer for an id not in flight is ignored and logged once per
// connection.
//
// Confirmations (OnConfirmed): a broker gives no answer to a PUBACK, and until it has processed
// one it may send that message again after a reconnect. With a ConfirmedHandler, at most
// kConfirmAfter after PUBACKs (PUBRECs) go out, the client sends a PINGREQ behind them; the
// broker processes a connection's packets in order, so its PINGRESP confirms every
// acknowledgement written before that PINGREQ, and the handler gets their packet ids. An id
// that arrives again before the PINGRESP (a redelivery, or a new message using it) is not
// confirmed by it. A connection that ends first confirms nothing.
//
// Threading: everything runs on the io_context's thread; Acknowledge() and Resume() may be
// called from any thread (they post). Owned through shared_ptr: call Stop() before release.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp needs std::exchange declared first.

#include <array>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mqtt/outbound.h"
#include "mqtt/packet.h"
#include "mqtt/packet_id_states.h"
#include "mqtt/packet_reader.h"
#include "mqtt/transport.h"
#include "seedance/result.h"
#include "util/handler_slot.h"
#include "util/loop_signal.h"
#include "util/random_seed.h"
#include "util/ring_queue.h"

namespace seedance::mqtt {

struct TlsOptions {
  bool enabled = false;
  std::string ca_file;    // verify the broker against these CAs; system CAs when empty
  std::string cert_file;  // client certificate (mutual TLS), optional
  std::string key_file;
  bool verify = true;       // false accepts any certificate (testing only)
  std::string server_name;  // SNI and verified name; the host when empty
};

struct ClientOptions {
  std::string host;
  uint16_t port = 1883;
  TlsOptions tls;
  Version version = Version::kV5;
  std::string client_id;
  std::optional<std::string> username;
  std::optional<std::string> password;
  uint16_t keep_alive_s = 30;
  bool clean_start = true;
  uint32_t session_expiry_s = 0;    // MQTT 5: how long the broker keeps the session
  uint16_t receive_maximum = 1024;  // MQTT 5: unacknowledged QoS 1/2 messages in flight
  std::vector<Subscription> subscriptions;
  // Filters a resumed session may still hold from an earlier configuration: unsubscribed
  // (after the SUBSCRIBE) whenever the broker resumes the session, in UNSUBSCRIBEs of at most
  // kMaxUnsubscribePacket bytes and the broker's Maximum Packet Size, one after the other.
  std::vector<std::string> unsubscribe;
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds reconnect_min{200};
  std::chrono::milliseconds reconnect_max{30000};
  size_t max_packet_size = 16 * 1024 * 1024;
  uint32_t max_publish_in_flight = 65535;  // QoS 1/2 messages published and not yet complete
  // A published message not answered within this on a live connection ends it (see above);
  // 0: never.
  std::chrono::milliseconds ack_timeout{0};
  // After a read that did not fill the read buffer, wait before the next read, so that
  // messages arriving meanwhile are taken in (and handed on, and acknowledged) as one batch:
  // one wake-up per batch instead of one per message at steady rates. The wait follows the
  // rate (ReadPacer: about 14 messages' time) and is at most this. Not while
  // kLingerMaxUnacked or more QoS 1/2 messages are unacknowledged (a broker's in-flight window
  // would stall). 0: read at once.
  std::chrono::microseconds read_linger{0};
  std::string log_name = "mqtt";
};

enum class ClientState { kConnecting, kConnected, kDisconnected, kStopped };
const char* ClientStateName(ClientState s);

class Client : public std::enable_shared_from_this<Client> {
 public:
  // Called for each PUBLISH. `ack_token` is 0 for QoS 0. Return false to refuse for now: the
  // client pauses reading and calls again with the same message after Resume().
  // `invalid` is empty for a normal message, else why it cannot be taken (see above).
  using MessageHandler =
      std::function<bool(Publish& message, uint64_t ack_token, std::string_view invalid)>;
  // Called on each state change with a one-line detail (e.g. why a connection failed);
  // `news` is false for a repeat within one outage (log it once, count it always).
  using StateHandler = std::function<void(ClientState state, const std::string& detail, bool news)>;
  // Called on the io thread when a published message is complete (see OutboundSession).
  using PublishedHandler = std::function<void(const OutboundSession::Completion& completion)>;
  // Called on the io thread with the packet ids whose acknowledgements the broker processed.
  using ConfirmedHandler = std::function<void(const std::vector<uint16_t>& packet_ids)>;
  // How long after an acknowledgement the PINGREQ that confirms it is sent (at most one
  // confirmation PINGREQ in flight; keep-alive PINGREQs confirm too).
  static constexpr std::chrono::milliseconds kConfirmAfter{500};
  // A connection that lasts this long ends an outage and resets the reconnect backoff.
  static constexpr std::chrono::seconds kStableAfter{10};
  // ClientOptions::read_linger applies only below this many unacknowledged messages:
  // mosquitto's default in-flight window (max_inflight_messages 20). With that many the broker
  // can send nothing more until the batch just read is acknowledged, so a burst reads again at
  // once instead of lingering on a stalled window. Below it the broker can still send, and the
  // acknowledgements go out during the wait anyway. Below the window, not at a lower value:
  // a read aims at ReadPacer::kBatch (14) and sometimes takes a few more, and a limit under
  // what such a read takes made it followed by an immediate read of one or two messages
  // (docs/bench.md, "Tuning record").
  static constexpr size_t kLingerMaxUnacked = 20;
  // A TLS read after a linger that completes within this took data that was already there.
  static constexpr std::chrono::microseconds kReadAtOnce{500};
  // The largest UNSUBSCRIBE sent: a broker's limit need not be announced (MQTT 3.1.1), and a
  // few round trips more at a resumed connection cost little.
  static constexpr size_t kMaxUnsubscribePacket = 4096;

  Client(boost::asio::io_context& io, ClientOptions options, MessageHandler on_message,
         StateHandler on_state = nullptr);
  ~Client();

  // Starts connecting. REQUIRES: called once, on the io thread.
  void Start();
  // Before Start(): where PublishMessage() outcomes go.
  void OnPublished(PublishedHandler handler) { on_published_ = std::move(handler); }
  // Before Start(): where confirmed acknowledgements go (see class comment).
  void OnConfirmed(ConfirmedHandler handler) { on_confirmed_ = std::move(handler); }
  // Before Start(): called (io thread) once the broker's session holds exactly the configured
  // subscriptions — a new session, or a resumed one after the UNSUBACK of `unsubscribe`.
  void OnSubscriptionsSettled(std::function<void()> handler) { on_settled_ = std::move(handler); }
  // io thread: publishes `message` (packet id and DUP are the session's); its outcome goes to
  // the PublishedHandler with `tag`. Queued while disconnected. A message larger than the
  // broker's Maximum Packet Size completes at once with 0x95 (packet too large).
  void PublishMessage(mqtt::Publish message, uint64_t tag);
  // io thread: drops the messages with tags in [first, last] not yet sent (see
  // OutboundSession::Cancel).
  void CancelPublishes(uint64_t first_tag, uint64_t last_tag) {
    outbound_.Cancel(first_tag, last_tag);
  }
  // Any thread: acknowledges the message with `token` (see class comment).
  void Acknowledge(uint64_t token);
  // Any thread: resumes reading after the handler refused a message.
  void Resume();
  // Stops reading and reconnecting. Pending acknowledgements are still sent until Close().
  void Stop();
  // Sends DISCONNECT and closes the connection. REQUIRES: on the io thread.
  void Close();

  ClientState state() const { return state_; }
  // Why the last connection attempt failed or ended; empty while connected.
  const std::string& last_error() const { return last_error_; }
  uint64_t connects() const { return connects_; }
  // Whether the broker resumed a session at the last CONNACK.
  bool session_present() const { return session_present_; }
  // While a read's messages are handed on: how long before the read they may have started to
  // arrive — the linger before it (0 when it did not linger). A source dates them from then.
  std::chrono::nanoseconds read_waited() const { return read_waited_; }

 private:
  struct Inbound {
    uint16_t packet_id;
    uint8_t qos;
    uint64_t serial;  // counts the QoS 1/2 messages received (confirmations)
  };
  struct Acked {
    uint16_t packet_id;
    uint64_t serial;
  };

  boost::asio::awaitable<void> Run(std::shared_ptr<Client> self);
  boost::asio::awaitable<Status> ConnectOnce();
  boost::asio::awaitable<Status> ReadLoop();
  // Decodes the next whole packet from the bytes read so far into reader_.packet()
  // (consumed); false when more bytes are needed.
  Result<bool> TakeBufferedPacket();
  // After a read of `n` bytes into read_buffer_: hands them to reader_, or says why it failed.
  Status Received(boost::system::error_code ec, size_t n);
  boost::asio::awaitable<Result<Packet>> ReadPacket();
  boost::asio::awaitable<void> KeepAlive(std::shared_ptr<Client> self, uint64_t generation);
  // While connection `generation` lasts: ends it when a published message waited ack_timeout.
  boost::asio::awaitable<void> WatchAnswers(std::shared_ptr<Client> self, uint64_t generation);
  // Ends the connection for `why` (the reason Run() reports instead of the socket's error).
  void EndConnection(std::string why);
  Status HandlePacket(Packet& packet, bool* refused);
  void Send(const Packet& packet);
  // Sends the next UNSUBSCRIBE of a resumed session (see ClientOptions::unsubscribe), or, when
  // every filter was answered, reports the subscriptions settled.
  void SendNextUnsubscribe();
  // Encodes `packet` behind what is waiting to be written; FlushWrites() sends it. False (and
  // the state says why) when it cannot be encoded.
  bool Queue(const Packet& packet);
  // Writes what the outbound session returned, then reports its completions.
  void SendOutbound(std::vector<OutboundSession::ToSend>& send,
                    std::vector<OutboundSession::Completion>& done);
  void FlushWrites();
  // Queues the acknowledgements `token` releases (in order); the caller flushes.
  void AckOnLoop(uint64_t token);
  void DrainAcks();
  // Sends a PINGREQ; with confirmations, it carries the acknowledgements written before it.
  void SendPing();
  // Arms the confirmation PINGREQ when acknowledgements wait for one.
  void ScheduleConfirmation();
  // A PINGRESP: confirms the acknowledgements of the oldest PINGREQ in flight.
  void OnPingResp();
  void CloseSocket();
  void SetState(ClientState s, const std::string& detail);
  bool IsOpen() const;

  boost::asio::io_context& io_;
  ClientOptions opts_;
  MessageHandler on_message_;
  StateHandler on_state_;

  std::unique_ptr<boost::asio::ssl::context> ssl_ctx_;
  std::shared_ptr<Transport> conn_;  // this connection's (a new one per connection)
  std::array<char, 65536> read_buffer_;
  PacketReader reader_{opts_.version, opts_.max_packet_size};

  std::string tx_pending_;  // encoded packets waiting for the current write to finish
  // The bytes being written; reused (with its storage) once no write holds it any more.
  std::shared_ptr<std::string> tx_writing_;
  bool writing_ = false;
  std::chrono::nanoseconds read_waited_{0};  // see read_waited()

  // Acknowledge() from other threads: tokens gathered here and drained on the loop in one go.
  std::mutex ack_mu_;
  std::vector<uint64_t> ack_inbox_;
  std::vector<uint64_t> ack_draining_;  // loop thread only
  std::unique_ptr<util::LoopSignal> ack_signal_;
  util::SharedSlot write_slot_ = util::MakeSlot();  // the one write in progress (writing_)

  uint64_t generation_ = 0;           // counts connections; part of every ack token
  util::RingQueue<Inbound> inbound_;  // QoS 1/2 messages not yet acknowledged, in arrival order
  PacketIdStates acked_;            // by packet id: 1 held, 2 acknowledged but not yet sent (order)
  PacketIdStates awaiting_rel_;     // QoS 2: 1 once PUBREC is sent, until the PUBREL
  std::optional<Publish> refused_;  // message the handler refused, redelivered on Resume
  uint64_t refused_token_ = 0;
  std::string refused_invalid_;
  boost::asio::steady_timer resume_timer_;
  boost::asio::steady_timer read_linger_timer_;
  bool resume_pending_ = false;
  bool paused_ = false;
  uint16_t keep_alive_s_ = 30;
  std::chrono::steady_clock::time_point last_rx_;

  ClientState state_ = ClientState::kDisconnected;
  ClientState reported_state_ = ClientState::kConnecting;  // last state given to on_state_
  std::string last_detail_;
  bool in_outage_ = false;                // disconnected since the last stable connection
  std::vector<std::string> outage_news_;  // details already reported in this outage
  std::chrono::steady_clock::time_point connected_at_;
  bool warned_receive_maximum_ = false;
  PublishedHandler on_published_;
  OutboundSession outbound_;
  uint32_t broker_max_packet_ = 0;    // MQTT 5 CONNACK Maximum Packet Size; 0: no limit given
  uint16_t subscribe_id_ = 0;         // the SUBSCRIBE in flight, 0 when none
  uint16_t unsubscribe_id_ = 0;       // the UNSUBSCRIBE in flight, 0 when none
  size_t unsubscribe_first_ = 0;      // index in opts_.unsubscribe of its first filter
  size_t unsubscribe_next_ = 0;       // the first filter not sent yet
  bool unsubscribe_refused_ = false;  // the broker kept one of them, this connection
  std::function<void()> on_settled_;
  std::string connected_detail_;            // the connection's description until its SUBACK
  boost::asio::steady_timer suback_timer_;  // connect_timeout for the SUBACK
  std::string end_reason_;                  // why this side ended the connection (EndConnection)
  bool warned_not_in_flight_ = false;       // an answer for an id not in flight, this connection
  std::string last_error_;
  bool stopped_ = false;
  bool closed_ = false;
  uint64_t connects_ = 0;
  std::mt19937 rng_{util::RandomSeed()};
  // Confirmations (see class comment).
  ConfirmedHandler on_confirmed_;
  bool session_present_ = false;
  uint64_t rx_serial_ = 0;
  std::vector<Acked> acked_unpinged_;                     // acknowledged since the last PINGREQ
  std::deque<std::vector<Acked>> pings_;                  // PINGREQs in flight, oldest first
  std::unordered_map<uint16_t, uint64_t> latest_serial_;  // ids awaiting confirmation
  boost::asio::steady_timer confirm_timer_;
  bool confirm_armed_ = false;
};

}  // namespace seedance::mqtt
