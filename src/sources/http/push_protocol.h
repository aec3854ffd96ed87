// What a push source (http, otlp) speaks over its HTTP server: which paths it takes, how a
// request's body becomes events, and how its answers look. The server part (connections,
// limits, auth, TLS, decompression, the answer only once every event is stored, idempotency
// keys) is push_source.h, the same for every protocol.
#pragma once

#include <boost/beast/http/status.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/server.h"
#include "seedance/event.h"
#include "seedance/result.h"

namespace seedance::sources {

// One request's events, and the records of it refused one by one (the rest is taken).
struct PushBatch {
  std::vector<Event> events;  // payload, format, event time and headers set; the source sets
                              // source, topic and ingest time
  struct Refused {
    std::string record;  // as received (for the error output)
    std::string reason;
  };
  std::vector<Refused> refused;
};

struct PushReply {
  std::string content_type;
  std::string body;
};

class PushProtocol {
 public:
  virtual ~PushProtocol() = default;

  // The topic of the events of a request to `path` (without its query), or nullopt: 404.
  virtual std::optional<std::string> Topic(std::string_view path) const = 0;

  // The events of `body` (decompressed), at most `max_events` of them. kInvalidArgument with
  // the reason: 400 and the body goes to the error output; kResourceExhausted: 413;
  // kFailedPrecondition: 415 (a content type the protocol does not read).
  virtual Result<PushBatch> Decode(const http::Request& req, std::string_view topic,
                                   std::string_view body, size_t max_events,
                                   int64_t now_ns) const = 0;

  // The body of a 200 answer: `accepted` events stored, `batch.refused` refused; `repeat`: a
  // request sent again with an idempotency key, stored before.
  virtual PushReply Accepted(const http::Request& req, const PushBatch& batch, size_t accepted,
                             bool repeat) const = 0;

  // The body of any other answer. `req` is null for a request refused before it was read
  // (too large).
  virtual PushReply Refused(const http::Request* req, boost::beast::http::status status,
                            std::string_view message) const = 0;
};

}  // namespace seedance::sources
