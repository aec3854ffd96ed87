// The http source's options (docs/http-source.md) and their schema.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "seedance/options.h"
#include "sources/http/request_body.h"

namespace seedance::sources {

struct HttpSourceOptions {
  std::string listen;
  StringPairs paths;  // path -> topic; empty: any path, its topic is the path
  BodyFormat format = BodyFormat::kAuto;
  std::string bearer_token;
  struct BasicAuth {
    std::string user, password;
  } basic_auth;  // on when user is set
  struct Tls {
    std::string cert_file, key_file, client_ca_file;
  } tls;  // on when cert_file is set
  uint64_t max_body = 0;
  int64_t max_events = 0;
  int64_t max_connections = 0;
  int64_t max_connections_per_client = 0;
  std::chrono::nanoseconds idle_timeout{0};
  std::chrono::nanoseconds ack_timeout{0};
  std::string idempotency_header;  // empty: none
  std::chrono::nanoseconds idempotency_keep{0};
};

const Options<HttpSourceOptions>& HttpSourceSchema();

// The options every push source has (push_source.h): listen, auth, TLS, limits, timeouts.
struct PushServerDefaults {
  std::string listen;  // empty: required
  std::string max_events_name;
  std::string max_events_doc;
};
void AddPushServerOptions(Options<HttpSourceOptions>& o, const PushServerDefaults& d);

}  // namespace seedance::sources
