#include "sinks/nats/nats_sink.h"

#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "seedance/sink.h"
#include "sinks/common/event_encoding.h"
#include "sinks/common/event_template.h"
#include "sinks/common/header_selection.h"
#include "sinks/common/message_acks.h"
#include "sinks/nats/nats_library.h"
#include "sinks/nats/nats_subject.h"
#include "util/callback_target.h"
#include "util/event_loop.h"
#include "util/log.h"
#include "util/strings.h"
#include "util/tls_files.h"

namespace seedance::sinks {
namespace {

using std::chrono::milliseconds;

struct CreateStream {
  std::vector<std::string> subjects;
  int replicas = 1;
  milliseconds duplicate_window{std::chrono::minutes(2)};
};

struct NatsSinkOptions {
  std::vector<std::string> servers;
  std::string subject_text;
  std::optional<EventTemplate> subject;
  std::string stream;
  std::optional<CreateStream> create_stream;
  std::string username;
  std::string password;
  std::string token;
  std::string credentials;  // a .creds file (JWT and NKey seed)
  struct NKey {
    std::string public_key;  // U...
    std::string seed_file;   // holding the seed, SU...
  };
  std::optional<NKey> nkey;
  struct Tls {
    bool enabled = false;
    std::string ca_file;
    bool verify = true;
  } tls;
  EventEncoding encoding = EventEncoding::kPayload;
  std::vector<std::string> event_headers{"*"};
  int max_pending = 4096;
  milliseconds reconnect_wait{250};
  milliseconds connect_timeout{2000};
};

// libnats's per-thread error text without the "(conn.c:1905): " it starts with.
std::string ThreadErrorText(const NatsLibrary& lib) {
  const char* text = lib.nats_GetLastError(nullptr);
  std::string_view t = text != nullptr ? text : "";
  if (!t.empty() && t.front() == '(') {
    if (size_t end = t.find("): "); end != std::string_view::npos) t.remove_prefix(end + 3);
  }
  return std::string(t);
}

std::string StatusText(const NatsLibrary& lib, natsStatus s) {
  const char* text = lib.natsStatus_GetText(s);
  return text != nullptr ? text : fmt::format("status {}", static_cast<int>(s));
}

// Kept alive by the sink and the posted completions. libnats calls back on its own threads,
// perhaps after the publisher is gone (its connection handlers run from a queue, its PubAcks on
// a subscription's thread, and no call waits for them): every callback gets callbacks_'s key,
// never `this`, and Close detaches it before tearing the connection down.
class NatsPublisher : public std::enable_shared_from_this<NatsPublisher> {
 public:
  NatsPublisher(const NatsLibrary& lib, NatsSinkOptions o, PluginContext ctx)
      : lib_(lib),
        o_(std::move(o)),
        ctx_(std::move(ctx)),
        acks_(std::make_shared<MessageAcks>(*ctx_.loop)),
        headers_(o_.event_headers, /*text_fields=*/true),
        callbacks_(this) {}
  ~NatsPublisher() { Close(); }

  Status Start();
  void Attempt(uint64_t id, const Batch& batch, AttemptCallback done);
  void Abort(uint64_t id);
  void Stop();

 private:
  static void OnAck(jsCtx* js, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure);
  void Acknowledged(natsMsg* msg, jsPubAckErr* pae);
  static void OnDisconnected(natsConnection* nc, void* closure);
  static void OnConnected(natsConnection* nc, void* closure);
  static void OnError(natsConnection* nc, natsSubscription* sub, natsStatus err, void* closure);
  // libnats gave the connection up: it does not retry a login refused twice in a row. Said
  // once, with the reason, however the first attempt's reason was reported.
  static void OnClosed(natsConnection* nc, void* closure);
  // The connection's last error ("Authorization Violation"), or "".
  std::string LastError(natsConnection* nc) const;
  static void OnReconnected(natsConnection* nc, void* closure);
  Status CheckStream();
  // Takes back from libnats the messages of earlier attempts still awaiting a PubAck.
  void ReclaimUnanswered();
  // Sets the message's headers: Nats-Msg-Id and the event headers asked for.
  void SetHeaders(natsMsg* m, const Event& e);
  void Close();

  const NatsLibrary& lib_;
  NatsSinkOptions o_;
  PluginContext ctx_;
  natsOptions* opts_ = nullptr;
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  std::shared_ptr<MessageAcks> acks_;
  HeaderSelection headers_;
  std::mutex mu_;  // guards pending_ (libnats's thread and the loop)
  struct Slot {
    MessageAcks::Handle attempt;
    size_t index = 0;
  };
  std::unordered_map<natsMsg*, Slot> pending_;  // messages awaiting their PubAck
  bool stream_checked_ = false;                 // loop only: the stream exists (or was made)
  bool stopped_ = false;
  uint64_t reclaimed_ = 0;  // loop only: messages taken back from libnats (ReclaimUnanswered)
  util::LogLimiter limiter_;
  std::string first_refusal_;  // why the attempt at start failed (set before retrying)
  util::CallbackTarget<NatsPublisher> callbacks_;
};

Status NatsPublisher::Start() {
  auto fail = [this](std::string_view what, natsStatus s) {
    return InvalidArgumentError(fmt::format("nats: {}: {}", what, StatusText(lib_, s)));
  };
  natsStatus s = lib_.natsOptions_Create(&opts_);
  if (s != NATS_OK) return fail("options", s);
  std::vector<const char*> servers;
  for (const auto& url : o_.servers) servers.push_back(url.c_str());
  s = lib_.natsOptions_SetServers(opts_, servers.data(), static_cast<int>(servers.size()));
  if (s != NATS_OK) return fail("servers", s);
  lib_.natsOptions_SetName(opts_, ctx_.name.c_str());
  lib_.natsOptions_SetTimeout(opts_, o_.connect_timeout.count());
  lib_.natsOptions_SetMaxReconnect(opts_, -1);  // forever, across the cluster's members
  lib_.natsOptions_SetReconnectWait(opts_, o_.reconnect_wait.count());
  void* key = callbacks_.closure();
  lib_.natsOptions_SetDisconnectedCB(opts_, &NatsPublisher::OnDisconnected, key);
  lib_.natsOptions_SetReconnectedCB(opts_, &NatsPublisher::OnReconnected, key);
  lib_.natsOptions_SetErrorHandler(opts_, &NatsPublisher::OnError, key);
  if ((s = lib_.natsOptions_SetClosedCB(opts_, &NatsPublisher::OnClosed, key)) != NATS_OK) {
    return fail("closed callback", s);
  }
  if (!o_.username.empty() || !o_.password.empty()) {
    s = lib_.natsOptions_SetUserInfo(opts_, o_.username.c_str(), o_.password.c_str());
    if (s != NATS_OK) return fail("username/password", s);
  }
  if (!o_.token.empty() && (s = lib_.natsOptions_SetToken(opts_, o_.token.c_str())) != NATS_OK) {
    return fail("token", s);
  }
  if (!o_.credentials.empty()) {
    s = lib_.natsOptions_SetUserCredentialsFromFiles(opts_, o_.credentials.c_str(), nullptr);
    if (s != NATS_OK) return fail("credentials " + o_.credentials, s);
  }
  if (o_.nkey) {
    s = lib_.natsOptions_SetNKeyFromSeed(opts_, o_.nkey->public_key.c_str(),
                                         o_.nkey->seed_file.c_str());
    if (s != NATS_OK) return fail("nkey", s);
  }
  if (o_.tls.enabled || !o_.tls.ca_file.empty()) {
    if ((s = lib_.natsOptions_SetSecure(opts_, true)) != NATS_OK) return fail("TLS", s);
    if (!o_.tls.ca_file.empty()) {
      s = lib_.natsOptions_LoadCATrustedCertificates(opts_, o_.tls.ca_file.c_str());
      if (s != NATS_OK) return fail("tls.ca_file " + o_.tls.ca_file, s);
    }
    if (!o_.tls.verify) lib_.natsOptions_SkipServerVerification(opts_, true);
  }
  // The first attempt without retrying, so that what it met (a refused login, no server
  // listening) is this thread's to read: with retrying on, libnats's reconnect thread clears
  // the connection's error at once, and under load the warning said "No server available"
  // for a refused login.
  s = lib_.natsConnection_Connect(&nc_, opts_);
  bool connected = s == NATS_OK;
  std::string why;
  if (!connected) {
    nc_ = nullptr;
    why = ThreadErrorText(lib_);
    if (why.empty()) why = StatusText(lib_, s);
    {
      std::lock_guard<std::mutex> lock(mu_);  // OnClosed reads it on libnats's thread
      first_refusal_ = why;
    }
    // Then in the background (attempts are retried meanwhile). With a callback the first
    // failure returns at once (without one, libnats blocks retrying).
    lib_.natsOptions_SetRetryOnFailedConnect(opts_, true, &NatsPublisher::OnConnected, key);
    s = lib_.natsConnection_Connect(&nc_, opts_);
    connected = s == NATS_OK;  // there meanwhile
    if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) return fail("connect", s);
  }
  jsOptions jo;
  lib_.jsOptions_Init(&jo);
  jo.PublishAsync.MaxPending = o_.max_pending;
  jo.PublishAsync.AckHandler = &NatsPublisher::OnAck;
  jo.PublishAsync.AckHandlerClosure = key;
  if ((s = lib_.natsConnection_JetStream(&js_, nc_, &jo)) != NATS_OK) return fail("JetStream", s);
  if (!connected) {
    SEEDANCE_LOG_WARN(ctx_.name,
                      "could not connect to {}{}{}; connecting in the background, stream {} not "
                      "checked",
                      fmt::join(o_.servers, ", "), why.empty() ? "" : ": ", why, o_.stream);
    return Status::Ok();
  }
  SEEDANCE_RETURN_IF_ERROR(CheckStream());
  stream_checked_ = true;
  char url[256] = "";
  lib_.natsConnection_GetConnectedUrl(nc_, url, sizeof url);
  SEEDANCE_LOG_INFO(ctx_.name, "connected to {} (JetStream stream {})", url, o_.stream);
  return Status::Ok();
}

Status NatsPublisher::CheckStream() {
  jsStreamInfo* si = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus s = lib_.js_GetStreamInfo(&si, js_, o_.stream.c_str(), nullptr, &code);
  if (s == NATS_OK) {
    lib_.jsStreamInfo_Destroy(si);
    return Status::Ok();
  }
  if (s != NATS_NOT_FOUND) {
    // The cluster did not answer in time (electing a leader, a node restarting): not a
    // configuration error. Publishes are retried until the stream takes them.
    SEEDANCE_LOG_WARN(ctx_.name, "could not check stream {} ({}); publishing anyway", o_.stream,
                      StatusText(lib_, s));
    return Status::Ok();
  }
  if (!o_.create_stream) {
    return InvalidArgumentError(fmt::format(
        "nats: stream {} does not exist on the server: create it, or give create_stream: to "
        "have it created",
        o_.stream));
  }
  jsStreamConfig cfg;
  lib_.jsStreamConfig_Init(&cfg);
  cfg.Name = o_.stream.c_str();
  std::vector<const char*> subjects;
  for (const auto& subject : o_.create_stream->subjects) subjects.push_back(subject.c_str());
  cfg.Subjects = subjects.data();
  cfg.SubjectsLen = static_cast<int>(subjects.size());
  cfg.Replicas = o_.create_stream->replicas;
  cfg.Duplicates =
      std::chrono::duration_cast<std::chrono::nanoseconds>(o_.create_stream->duplicate_window)
          .count();
  s = lib_.js_AddStream(&si, js_, &cfg, nullptr, &code);
  if (s == NATS_TIMEOUT) {
    SEEDANCE_LOG_WARN(ctx_.name, "creating stream {} timed out; publishing anyway", o_.stream);
    return Status::Ok();
  }
  if (s != NATS_OK) {
    return InvalidArgumentError(fmt::format("nats: creating stream {}: {} (JetStream error {})",
                                            o_.stream, StatusText(lib_, s),
                                            static_cast<int>(code)));
  }
  lib_.jsStreamInfo_Destroy(si);
  SEEDANCE_LOG_INFO(ctx_.name, "created stream {} ({} replica(s))", o_.stream,
                    o_.create_stream->replicas);
  return Status::Ok();
}

void NatsPublisher::SetHeaders(natsMsg* m, const Event& e) {
  // The job (host and data directory) and the event's place in the durable queue: the same
  // when the event is sent again, after a restart too, and no other event's, on this gateway
  // or another. Without the queue (buffer: memory, nothing survives a restart): unique in
  // this run.
  const std::string id = e.queue_sequence != 0
                             ? fmt::format("{}-{}", ctx_.instance, e.queue_sequence)
                             : fmt::format("{}-m-{:x}-{:x}", ctx_.instance, e.ingest_time_ns, e.id);
  lib_.natsMsgHeader_Set(m, "Nats-Msg-Id", id.c_str());
  // Header fields as HTTP's: a name that is not a token or a value with a line break is left
  // out (and Nats-Msg-Id is ours).
  headers_.ForEach(e, [&](const Header& h) {
    if (h.name != "Nats-Msg-Id") lib_.natsMsgHeader_Set(m, h.name.c_str(), h.value.c_str());
  });
}

void NatsPublisher::Attempt(uint64_t id, const Batch& batch, AttemptCallback done) {
  if (stopped_) return done(AttemptOutcome::Shutdown());
  if (!stream_checked_) {
    // Not connected at start: the stream is checked (or made) once a server is reached.
    if (lib_.natsConnection_Status(nc_) != NATS_CONN_STATUS_CONNECTED) {
      const std::string why = LastError(nc_);
      return done(AttemptOutcome::Retry(fmt::format("nats: not connected to {}{}{}",
                                                    fmt::join(o_.servers, ", "),
                                                    why.empty() ? "" : ": ", why)));
    }
    if (Status s = CheckStream(); !s.ok()) return done(AttemptOutcome::Retry(s.message()));
    stream_checked_ = true;
  }
  ReclaimUnanswered();
  const MessageAcks::Handle a = acks_->Begin(id, std::move(done));
  std::string subject, why, body;
  for (size_t i = 0; i < batch.events.size(); ++i) {
    const Event& e = batch.events[i];
    PayloadView payload(e);
    if (!o_.subject->Render(e, payload, &subject, &why)) {
      acks_->RefuseUnsent(a, i, "nats: " + why);
      continue;
    }
    if (std::string bad = CheckNatsSubject(subject); !bad.empty()) {
      acks_->RefuseUnsent(a, i, "nats: subject: " + bad);
      continue;
    }
    body.clear();
    AppendEvent(e, o_.encoding, /*as_json_value=*/false, body);
    natsMsg* m = nullptr;
    natsStatus s = lib_.natsMsg_Create(&m, subject.c_str(), nullptr, body.data(),
                                       static_cast<int>(body.size()));
    if (s != NATS_OK) {
      acks_->Sent(a);
      acks_->Failed(a, "nats: message: " + StatusText(lib_, s));
      break;
    }
    SetHeaders(m, e);
    natsMsg* key = m;
    acks_->Sent(a);
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_[key] = Slot{a, i};  // before the publish: its PubAck may come at once
    }
    s = lib_.js_PublishMsgAsync(js_, &m, nullptr);
    if (s == NATS_OK) continue;
    bool ours = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ours = pending_.erase(key) > 0;
    }
    lib_.natsMsg_Destroy(m);  // ours again when the publish failed (no-op if taken)
    if (!ours) continue;      // answered by the ack handler meanwhile
    if (s == NATS_MAX_PAYLOAD) {
      acks_->Refused(a, i, "nats: the message is larger than the server's max_payload");
      continue;
    }
    acks_->Failed(a, "nats: publish: " + StatusText(lib_, s));
    break;
  }
  acks_->Launched(a);
}

void NatsPublisher::ReclaimUnanswered() {
  // One attempt at a time (the sink is not concurrent), so every message still pending here is
  // an ended attempt's: aborted at the timeout, its PubAck lost (a connection that dropped after
  // the server stored the message). libnats keeps such a message, without a deadline, among
  // the max_pending it lets await a PubAck, and past max_pending every publish waits 200 ms and
  // fails: a few lost PubAcks wedged the sink for good. Taken back, they are sent again by the
  // retry (the stream drops repeats by Nats-Msg-Id), and a late PubAck finds nothing.
  // (libnats's deadline per message, jsPubOptions.MaxWait, would keep a record of every message
  // published for that long: about 80 bytes each, 64 MB at 80,000 messages a second and 10 s.)
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.empty()) return;  // also: js_PublishAsyncGetPendingList faults before a publish
  }
  natsMsgList unanswered{};
  if (lib_.js_PublishAsyncGetPendingList(&unanswered, js_) != NATS_OK) return;  // none left
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int i = 0; i < unanswered.Count; ++i) pending_.erase(unanswered.Msgs[i]);
  }
  reclaimed_ += static_cast<uint64_t>(unanswered.Count);
  if (uint64_t suppressed = 0; limiter_.Allow("reclaimed", &suppressed)) {
    SEEDANCE_LOG_WARN(ctx_.name,
                      "{} message(s) in all had no PubAck within the timeout and are sent again "
                      "(a lost PubAck: the stream drops a repeat by its Nats-Msg-Id)",
                      reclaimed_);
  }
  lib_.natsMsgList_Destroy(&unanswered);  // the messages too
}

void NatsPublisher::OnAck(jsCtx*, natsMsg* msg, jsPubAck*, jsPubAckErr* pae, void* closure) {
  util::CallbackTarget<NatsPublisher>::With(
      closure, [&](NatsPublisher& self) { self.Acknowledged(msg, pae); });
  // The handler owns the message (nats.h, jsPubAckHandler: "the user is responsible for
  // destroying the message"), whether or not the publisher is still there. Not destroying it
  // leaked every message published: its payload and about 250 bytes more. The library is
  // loaded once per process and never unloaded.
  if (const NatsLibrary* lib = LoadNatsLibrary(nullptr)) lib->natsMsg_Destroy(msg);
}

void NatsPublisher::Acknowledged(natsMsg* msg, jsPubAckErr* pae) {
  Slot slot;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(msg);
    if (it == pending_.end()) return;  // stopped meanwhile
    slot = std::move(it->second);
    pending_.erase(it);
  }
  if (pae == nullptr) return acks_->Acked(slot.attempt);
  // JetStream refusing this message for good: too large for the stream. Anything else (no
  // responders while the stream's leader moves, a timeout) is worth another try.
  if (pae->ErrCode == JSStreamMessageExceedsMaximumErr) {
    return acks_->Refused(slot.attempt, slot.index, "nats: larger than the stream's max_msg_size");
  }
  const std::string connection = LastError(nc_);
  acks_->Failed(
      slot.attempt,
      fmt::format("nats: no PubAck: {}{}{}", lib_.natsStatus_GetText(pae->Err),
                  pae->ErrText != nullptr ? fmt::format(" ({})", pae->ErrText) : std::string(),
                  connection.empty() ? "" : fmt::format("; connection: {}", connection)));
}

void NatsPublisher::Abort(uint64_t id) {
  // Its messages may still reach the stream: the retry's copies are dropped by msg id. Their
  // late PubAcks find a finished attempt.
  acks_->Abort(id, "no PubAck for every message within the timeout");
}

void NatsPublisher::OnDisconnected(natsConnection*, void* closure) {
  util::CallbackTarget<NatsPublisher>::With(closure, [](NatsPublisher& self) {
    SEEDANCE_LOG_WARN(self.ctx_.name, "disconnected from NATS; reconnecting");
  });
}

void NatsPublisher::OnConnected(natsConnection* nc, void* closure) {
  util::CallbackTarget<NatsPublisher>::With(closure, [nc](NatsPublisher& self) {
    char url[256] = "";
    self.lib_.natsConnection_GetConnectedUrl(nc, url, sizeof url);
    SEEDANCE_LOG_INFO(self.ctx_.name, "connected to {}", url);
  });
}

void NatsPublisher::OnError(natsConnection* nc, natsSubscription*, natsStatus err, void* closure) {
  util::CallbackTarget<NatsPublisher>::With(closure, [&](NatsPublisher& self) {
    uint64_t suppressed = 0;
    if (!self.limiter_.Allow("async-error", &suppressed)) return;
    const std::string last = self.LastError(nc);
    SEEDANCE_LOG_WARN(self.ctx_.name, "nats: {}{}{}{}", StatusText(self.lib_, err),
                      last.empty() ? "" : ": ", last,
                      suppressed ? fmt::format(" ({} similar not logged)", suppressed) : "");
  });
}

std::string NatsPublisher::LastError(natsConnection* nc) const {
  const char* text = nullptr;
  if (nc == nullptr || lib_.natsConnection_GetLastError(nc, &text) == NATS_OK || text == nullptr) {
    return "";
  }
  return text;
}

void NatsPublisher::OnReconnected(natsConnection* nc, void* closure) {
  util::CallbackTarget<NatsPublisher>::With(closure, [nc](NatsPublisher& self) {
    char url[256] = "";
    self.lib_.natsConnection_GetConnectedUrl(nc, url, sizeof url);
    SEEDANCE_LOG_INFO(self.ctx_.name, "reconnected to {}", url);
  });
}

void NatsPublisher::Stop() {
  stopped_ = true;
  Close();
  acks_->StopAll();
}

void NatsPublisher::OnClosed(natsConnection* nc, void* closure) {
  // Closed by Stop or the destructor: detached first, so nothing to say.
  util::CallbackTarget<NatsPublisher>::With(closure, [nc](NatsPublisher& self) {
    const char* text = nullptr;
    const natsStatus s = self.lib_.natsConnection_GetLastError(nc, &text);
    // A login refused at start: libnats 3.4 then closes at once, saying only "no server".
    std::string why = s == NATS_NO_SERVER || s == NATS_OK || text == nullptr ? "" : text;
    if (why.empty()) {
      std::lock_guard<std::mutex> lock(self.mu_);
      why = self.first_refusal_;
    }
    SEEDANCE_LOG_ERROR(self.ctx_.name,
                       "connection to NATS closed{}{}; libnats does not retry a refused login: "
                       "events wait in the queue until seedance restarts with a configuration "
                       "the server accepts",
                       why.empty() ? "" : ": ", why);
  });
}

void NatsPublisher::Close() {
  // First: from here on libnats's callbacks find nothing, and one running has returned.
  callbacks_.Detach();
  if (nc_ != nullptr) lib_.natsConnection_Close(nc_);
  if (js_ != nullptr) lib_.jsCtx_Destroy(js_);
  js_ = nullptr;
  if (nc_ != nullptr) lib_.natsConnection_Destroy(nc_);
  nc_ = nullptr;
  if (opts_ != nullptr) lib_.natsOptions_Destroy(opts_);
  opts_ = nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  pending_.clear();
}

class NatsSink final : public Sink {
 public:
  explicit NatsSink(std::shared_ptr<NatsPublisher> p, size_t max_batch)
      : publisher_(std::move(p)), max_batch_(max_batch) {}
  Status Start() override { return publisher_->Start(); }
  void Attempt(uint64_t id, const Batch& batch, AttemptCallback done) override {
    publisher_->Attempt(id, batch, std::move(done));
  }
  void Abort(uint64_t id) override { publisher_->Abort(id); }
  size_t MaxBatchEvents() const override { return max_batch_; }
  void Stop() override { publisher_->Stop(); }

 private:
  std::shared_ptr<NatsPublisher> publisher_;
  size_t max_batch_;
};

Status CheckServers(const ParamValue& v) {
  const auto& servers = std::get<std::vector<std::string>>(v);
  if (servers.empty()) return InvalidArgumentError("servers: at least one nats:// URL");
  for (const auto& s : servers) {
    if (!s.starts_with("nats://") && !s.starts_with("tls://")) {
      return InvalidArgumentError(fmt::format(
          "\"{}\": a server is nats://host:port or tls://host:port", util::SanitizeText(s, 128)));
    }
  }
  return Status::Ok();
}

Status CheckSubjectTemplate(const ParamValue& v) {
  auto t = EventTemplate::Parse(std::get<std::string>(v), "subject");
  if (!t) return t.error();
  if (t->is_constant()) {
    if (std::string bad = CheckNatsSubject(std::get<std::string>(v)); !bad.empty()) {
      return InvalidArgumentError("subject: " + bad);
    }
  }
  return Status::Ok();
}

const Options<NatsSinkOptions>& NatsSinkSchema() {
  using S = NatsSinkOptions;
  using Tls = NatsSinkOptions::Tls;
  static const Options<S> o =
      Options<S>()
          .Add(&S::servers, {.name = "servers",
                             .doc = "NATS servers, e.g. [nats://127.0.0.1:4222]; the others of a "
                                    "cluster are learned from the first reached",
                             .required = true,
                             .validator = CheckServers})
          .Add(&S::subject_text,
               {.name = "subject",
                .doc = "subject: text with placeholders ({topic}, {topic.N}, {payload.FIELD}, "
                       "{header.NAME}), e.g. \"telemetry.{topic.2}\"",
                .required = true,
                .validator = CheckSubjectTemplate})
          .Add(&S::stream, {.name = "stream",
                            .doc = "the JetStream stream that takes the subjects; checked at start",
                            .required = true})
          .Section(
              &S::create_stream,
              {.name = "create_stream",
               .doc = "create the stream when it does not exist (else: an error at start)"},
              Options<CreateStream>()
                  .Add(&CreateStream::subjects,
                       {.name = "subjects", .doc = "subjects the stream takes", .required = true})
                  .Int(&CreateStream::replicas, {.name = "replicas",
                                                 .doc = "copies in the cluster (1-5)",
                                                 .default_value = "1"})
                  .Add(&CreateStream::duplicate_window,
                       {.name = "duplicate_window",
                        .doc = "how long the stream remembers message ids to drop re-sends",
                        .default_value = "2m"}))
          .Add(&S::username, {.name = "username", .doc = "user name"})
          .Add(&S::password, {.name = "password", .doc = "password, e.g. \"${NATS_PASSWORD}\""})
          .Add(&S::token, {.name = "token", .doc = "authentication token"})
          .Add(&S::credentials, {.name = "credentials",
                                 .doc = "a .creds file (user JWT and NKey seed)",
                                 .validator = util::CheckReadableFile})
          .Section(
              &S::nkey,
              {.name = "nkey", .doc = "NKey authentication (without a JWT: see credentials)"},
              Options<NatsSinkOptions::NKey>()
                  .Add(&NatsSinkOptions::NKey::public_key, {.name = "public_key",
                                                            .doc = "the user's public NKey (U...)",
                                                            .required = true})
                  .Add(&NatsSinkOptions::NKey::seed_file,
                       {.name = "seed_file",
                        .doc = "file holding the user's seed (SU...)",
                        .required = true,
                        .validator = util::CheckReadableFile}))
          .Section(&S::tls, {.name = "tls", .doc = "TLS (also on for tls:// servers)"},
                   Options<Tls>()
                       .Add(&Tls::enabled,
                            {.name = "enabled", .doc = "require TLS", .default_value = "false"})
                       .Add(&Tls::ca_file, {.name = "ca_file",
                                            .doc = "PEM CAs; system CAs when unset",
                                            .validator = util::CheckReadableFile})
                       .Add(&Tls::verify, {.name = "verify",
                                           .doc = "verify the server certificate",
                                           .default_value = "true"}))
          .Enum(&S::encoding,
                {.name = "encoding",
                 .doc = "each message: the event's payload, or an envelope with id, topic, time "
                        "and payload",
                 .default_value = "payload"},
                EventEncodingChoices())
          .Add(&S::event_headers,
               {.name = "event_headers",
                .doc = "event headers sent as message headers, by name or prefix (mqtt_*); "
                       "default all",
                .default_value = "[\"*\"]"})
          .Int(&S::max_pending, {.name = "max_pending",
                                 .doc = "messages awaiting their PubAck at once (and the most "
                                        "events one batch sends)",
                                 .default_value = "4096"})
          .Add(&S::reconnect_wait, {.name = "reconnect_wait",
                                    .doc = "wait between reconnect attempts",
                                    .default_value = "250ms"})
          .Add(&S::connect_timeout, {.name = "connect_timeout",
                                     .doc = "time allowed to connect to one server",
                                     .default_value = "2s"})
          .Check([](const S& s, const Params& p) -> Status {
            if (s.max_pending < 1) {
              return InvalidArgumentError(p.Location("max_pending") + ": max_pending: at least 1");
            }
            if (s.create_stream &&
                (s.create_stream->replicas < 1 || s.create_stream->replicas > 5)) {
              return InvalidArgumentError(p.Location("create_stream") +
                                          ": create_stream.replicas: 1 to 5");
            }
            return Status::Ok();
          });
  return o;
}

}  // namespace

// GCC 12 at -O3 (Release) warns that the bound options' tls.ca_file "may be used
// uninitialized" when the Result holding them is destroyed: a false positive of its
// -Wmaybe-uninitialized on strings in moved-from optionals (the members are default-initialized).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
SinkFactory NatsSinkFactory() {
  SinkFactory f;
  f.info.type = "nats";
  f.info.kind = PluginKind::kSink;
  f.info.summary =
      "Publishes events to NATS JetStream; a batch is delivered when every message "
      "has its PubAck.";
  // One batch at a time: its messages are pipelined (up to max_pending awaiting PubAcks).
  f.delivery = {.batch_size = "1000", .timeout = true, .default_timeout = "10s"};
  f.info.params = NatsSinkSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Sink>> {
    SEEDANCE_ASSIGN_OR_RETURN(NatsSinkOptions o, NatsSinkSchema().Bind(p));
    SEEDANCE_ASSIGN_OR_RETURN(EventTemplate subject,
                              EventTemplate::Parse(o.subject_text, "subject"));
    o.subject = std::move(subject);
    for (const auto& s : o.servers) {
      if (s.starts_with("tls://")) o.tls.enabled = true;
    }
    std::string why;
    const NatsLibrary* lib = LoadNatsLibrary(&why);
    if (lib == nullptr) return InvalidArgumentError(p.Location("servers") + ": " + why);
    const auto max_batch = static_cast<size_t>(o.max_pending);
    auto publisher = std::make_shared<NatsPublisher>(*lib, std::move(o), ctx);
    return std::unique_ptr<Sink>(new NatsSink(std::move(publisher), max_batch));
  };
  return f;
}

#pragma GCC diagnostic pop

}  // namespace seedance::sinks
