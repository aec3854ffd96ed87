#include "sinks/common/http_batch_sink.h"

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include <fmt/format.h>
#include <boost/asio/post.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>

#include "observe/metrics.h"
#include "sinks/common/header_selection.h"
#include "sinks/common/response_policy.h"
#include "util/event_loop.h"

namespace seedance::sinks {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

Status CheckHeaderFields(const ParamValue& v) {
  for (const auto& [name, value] : std::get<StringPairs>(v)) {
    SEEDANCE_RETURN_IF_ERROR(CheckHeaderField(name, value));
  }
  return Status::Ok();
}

namespace http_batch_internal {

Status CheckEndpoint(const ParamValue& v) {
  return http::ParseUrl(std::get<std::string>(v)).status();
}

Status CheckLevel(const HttpBatchOptions& s, const Params& p) {
  const int max = util::MaxCompressionLevel(s.compression);
  if (s.compression_level < 0 || s.compression_level > max) {
    return InvalidArgumentError(
        p.Location("compression_level") +
        (s.compression == util::BodyCompression::kNone
             ? ": compression_level needs compression: gzip or zstd"
         : max == 0 ? fmt::format(": compression_level: {} has no levels (0)",
                                  util::ContentEncoding(s.compression))
                    : fmt::format(": compression_level: {} takes 1 to {} (0: its default, {})",
                                  util::ContentEncoding(s.compression), max,
                                  util::DefaultCompressionLevel(s.compression))));
  }
  return Status::Ok();
}

std::vector<std::pair<std::string, HttpMethod>> MethodChoices() {
  return {{"POST", HttpMethod::kPost}, {"PUT", HttpMethod::kPut}};
}

}  // namespace http_batch_internal

AttemptOutcome HttpBatchCodec::Outcome(const Batch& /*batch*/, const http::Answer& a) const {
  ResponseVerdict verdict =
      ClassifyResponse(a.status, a.reason, a.body, a.retry_after, std::chrono::system_clock::now());
  switch (verdict.kind) {
    case ResponseVerdict::Kind::kDelivered:
      return AttemptOutcome::Delivered();
    case ResponseVerdict::Kind::kTooLarge:
      return AttemptOutcome::TooLarge(std::move(verdict.what));
    case ResponseVerdict::Kind::kRejected:
      return AttemptOutcome::Rejected(std::move(verdict.what));
    case ResponseVerdict::Kind::kRetry:
      break;
  }
  return AttemptOutcome::Retry(std::move(verdict.what), verdict.retry_after, verdict.backpressure);
}

namespace {

// Adds a codec's header fields to a request.
class RequestFieldWriter final : public HeaderFieldWriter {
 public:
  explicit RequestFieldWriter(http::ClientRequest& req) : req_(req) {}
  void Add(std::string_view name, std::string_view value) override {
    req_.insert(boost::beast::string_view(name.data(), name.size()),
                boost::beast::string_view(value.data(), value.size()));
  }

 private:
  http::ClientRequest& req_;
};

class BatchSender;

// One attempt on its way: the client's exchange (the request, its connection, the answer's
// parse) and what the answer is for. Pooled by the sink: an attempt on a kept-alive
// connection makes no heap allocation.
class Delivery final : public http::Exchange {
 public:
  BatchSender* sender = nullptr;  // its sink's; kept alive by the exchange's steps (Owner)
  const Batch* batch = nullptr;   // valid until `done` runs
  AttemptCallback done;
  std::vector<RejectedEvent> unwritable;  // events the codec could not write

 private:
  void Answered(const http::Answer& answer) override;
  void Failed(std::string reason, bool stopped) override;
  std::shared_ptr<void> Owner() override;
};

// The sink's state, shared with the deliveries in flight.
class BatchSender : public std::enable_shared_from_this<BatchSender> {
 public:
  BatchSender(HttpBatchOptions o, std::unique_ptr<HttpBatchCodec> codec, PluginContext ctx,
              std::shared_ptr<http::Client> client)
      : o_(std::move(o)),
        codec_(std::move(codec)),
        ctx_(std::move(ctx)),
        client_(std::move(client)),
        compressor_(o_.compression, o_.compression_level),
        pool_hits_(ctx_.metrics->GetCounter("seedance_pool_hits_total",
                                            "Objects taken from a pool instead of allocated.",
                                            {{"pool", "http_request"}, {"component", ctx_.name}})),
        pool_misses_(ctx_.metrics->GetCounter(
            "seedance_pool_misses_total", "Objects allocated because their pool had none free.",
            {{"pool", "http_request"}, {"component", ctx_.name}})) {}

  // Builds the request (the memory budget counts it with the batch: see the runner) and sends
  // it.
  void Attempt(uint64_t id, const Batch& batch, AttemptCallback done) {
    if (stopped_) return done(AttemptOutcome::Shutdown());
    Delivery* d = TakeDelivery();
    d->sender = this;
    d->batch = &batch;
    d->done = std::move(done);
    d->unwritable.clear();
    BuildRequest(batch, *d);
    if (d->unwritable.size() == batch.events.size() && !batch.events.empty()) {
      return Finish(d, AttemptOutcome::Delivered());  // nothing to send: all to `rejected`
    }
    client_->Send(*d, id);
  }

  // The runner's timeout: closes the attempt's connection; it fails, reported as a retry.
  void Abort(uint64_t id) { client_->Abort(id); }
  void Stop() {
    stopped_ = true;
    client_->Stop();
  }

  void Answered(Delivery* d, const http::Answer& answer) {
    Finish(d, codec_->Outcome(*d->batch, answer));
  }

  // The connection failed: a retry, or a shutdown once the sink stopped.
  void Failed(Delivery* d, const std::string& reason, bool stopped) {
    if (stopped) return Finish(d, AttemptOutcome::Shutdown());
    Finish(d,
           AttemptOutcome::Retry(fmt::format(
               "{} {}: {}", o_.method == HttpMethod::kPut ? "PUT" : "POST", o_.url_text, reason)));
  }

 private:
  Delivery* TakeDelivery();
  void BuildRequest(const Batch& batch, Delivery& d);
  // Reports `outcome` for the attempt and puts the delivery back in the pool.
  void Finish(Delivery* d, AttemptOutcome outcome);

  HttpBatchOptions o_;
  std::unique_ptr<HttpBatchCodec> codec_;
  PluginContext ctx_;
  std::shared_ptr<http::Client> client_;
  util::BodyCompressor compressor_;
  std::string uncompressed_;  // the codec's body before compression (storage reused)
  std::vector<std::unique_ptr<Delivery>> deliveries_;  // every delivery ever made (the pool)
  std::vector<Delivery*> free_;                        // of those, the unused ones
  size_t busy_ = 0;                                    // the rest
  size_t peak_busy_ = 0;                               // the most attempts in progress at once
  observe::Counter& pool_hits_;
  observe::Counter& pool_misses_;
  bool stopped_ = false;
};

void Delivery::Answered(const http::Answer& answer) { sender->Answered(this, answer); }

void Delivery::Failed(std::string reason, bool stopped) { sender->Failed(this, reason, stopped); }

// The sender holds the client: while a step of this delivery is pending, neither goes, even
// when its sink is dropped mid-attempt.
std::shared_ptr<void> Delivery::Owner() { return sender->shared_from_this(); }

Delivery* BatchSender::TakeDelivery() {
  Delivery* d;
  if (free_.empty()) {
    pool_misses_.Add();
    deliveries_.push_back(std::make_unique<Delivery>());
    d = deliveries_.back().get();
  } else {
    pool_hits_.Add();
    d = free_.back();
    free_.pop_back();
  }
  ++busy_;
  peak_busy_ = std::max(peak_busy_, busy_);
  return d;
}

void BatchSender::BuildRequest(const Batch& batch, Delivery& d) {
  std::string body = d.TakeBody();  // keeps its storage
  std::string_view content_type;
  bool compressed = false;
  if (o_.compression == util::BodyCompression::kNone) {
    content_type = codec_->Encode(batch, body, d.unwritable);
  } else {
    uncompressed_.clear();
    content_type = codec_->Encode(batch, uncompressed_, d.unwritable);
    // Only an allocation failure fails here; the body then goes uncompressed.
    if (!compressor_.Compress(uncompressed_, body))
      body.assign(uncompressed_);
    else
      compressed = true;
    // A large batch's scratch storage is not kept (the budget counts the batch, not this).
    if (uncompressed_.capacity() > MemoryAccount::kPooledBufferBytes) uncompressed_ = {};
  }
  http::ClientRequest& req = client_->NewRequest(
      d, o_.method == HttpMethod::kPut ? bhttp::verb::put : bhttp::verb::post, std::move(body));
  req.set(bhttp::field::content_type,
          boost::beast::string_view(content_type.data(), content_type.size()));
  if (compressed) {
    const std::string_view encoding = util::ContentEncoding(o_.compression);
    req.set(bhttp::field::content_encoding,
            boost::beast::string_view(encoding.data(), encoding.size()));
  }
  for (const auto& [name, value] : o_.headers) req.set(name, value);
  RequestFieldWriter fields(req);
  codec_->AddHeaderFields(batch, fields);
}

void BatchSender::Finish(Delivery* d, AttemptOutcome outcome) {
  // Pooled deliveries keep small bodies' storage only: memory nobody counts stays small.
  if (d->request().body().capacity() > MemoryAccount::kPooledBufferBytes) {
    d->request().body() = std::string();
  }
  if (outcome.kind == AttemptOutcome::Kind::kDelivered) {
    for (RejectedEvent& r : d->unwritable) outcome.rejected.push_back(std::move(r));
  }
  d->unwritable.clear();
  AttemptCallback done = std::move(d->done);
  d->done = nullptr;
  d->sender = nullptr;
  --busy_;
  // As many as were ever in use at once: a steady load reuses them.
  if (free_.size() + busy_ < peak_busy_) {
    free_.push_back(d);
  } else {
    auto it = std::find_if(deliveries_.begin(), deliveries_.end(),
                           [d](const auto& p) { return p.get() == d; });
    // Not freed here: its Answered() or Failed() is on the stack.
    asio::post(ctx_.loop->io(), [owned = std::shared_ptr<Delivery>(std::move(*it))] {});
    deliveries_.erase(it);
  }
  done(std::move(outcome));
}

class HttpBatchSink final : public Sink {
 public:
  HttpBatchSink(std::shared_ptr<BatchSender> sender, size_t max_batch)
      : sender_(std::move(sender)), max_batch_(max_batch) {}
  void Attempt(uint64_t id, const Batch& batch, AttemptCallback done) override {
    sender_->Attempt(id, batch, std::move(done));
  }
  void Abort(uint64_t id) override { sender_->Abort(id); }
  size_t MaxBatchEvents() const override { return max_batch_; }
  void Stop() override { sender_->Stop(); }

 private:
  std::shared_ptr<BatchSender> sender_;
  size_t max_batch_;
};

}  // namespace

Result<std::unique_ptr<Sink>> MakeHttpBatchSink(HttpBatchOptions o,
                                                std::unique_ptr<HttpBatchCodec> codec,
                                                PluginContext ctx, size_t max_batch) {
  SEEDANCE_ASSIGN_OR_RETURN(o.url, http::ParseUrl(o.url_text));
  SEEDANCE_ASSIGN_OR_RETURN(std::shared_ptr<http::Client> client,
                            http::Client::Make(ctx.loop->io(), {.url = o.url,
                                                                .ca_file = o.tls.ca_file,
                                                                .verify = o.tls.verify,
                                                                .max_response_body = 1 << 20,
                                                                .component = ctx.name}));
  // Shared: a delivery's pending steps hold it (Delivery::Owner), so a sink dropped
  // mid-attempt ends with its last one.
  auto sender = std::make_shared<BatchSender>(std::move(o), std::move(codec), std::move(ctx),
                                              std::move(client));
  return std::unique_ptr<Sink>(std::make_unique<HttpBatchSink>(std::move(sender), max_batch));
}

}  // namespace seedance::sinks
