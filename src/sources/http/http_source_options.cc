#include "sources/http/http_source_options.h"

#include "util/listen_address.h"
#include "util/tls_files.h"

namespace seedance::sources {

void AddPushServerOptions(Options<HttpSourceOptions>& o, const PushServerDefaults& d) {
  using S = HttpSourceOptions;
  using Basic = HttpSourceOptions::BasicAuth;
  using Tls = HttpSourceOptions::Tls;
  o.Add(&S::listen,
        {.name = "listen",
         .doc = "address and port to listen on, host:port (:port = every address)",
         .required = d.listen.empty(),
         .default_value = d.listen.empty() ? std::nullopt : std::optional<std::string>(d.listen),
         .validator =
             [](const ParamValue& v) {
               return util::ParseListenAddress(std::get<std::string>(v)).status();
             }})
      .Add(&S::bearer_token,
           {.name = "bearer_token",
            .doc = "when set, requests must carry 'Authorization: Bearer <token>' (use ${VAR})"})
      .Section(&S::basic_auth,
               {.name = "basic_auth",
                .doc = "when set, requests must carry HTTP basic credentials (use it with tls)"},
               Options<Basic>()
                   .Add(&Basic::user, {.name = "user", .doc = "user name", .required = true})
                   .Add(&Basic::password,
                        {.name = "password", .doc = "password (use ${VAR})", .required = true}))
      .Section(&S::tls, {.name = "tls", .doc = "serve HTTPS"},
               Options<Tls>()
                   .Add(&Tls::cert_file, {.name = "cert_file",
                                          .doc = "PEM certificate chain of this server",
                                          .required = true,
                                          .validator = util::CheckReadableFile})
                   .Add(&Tls::key_file, {.name = "key_file",
                                         .doc = "PEM private key of cert_file",
                                         .required = true,
                                         .validator = util::CheckReadableFile})
                   .Add(&Tls::client_ca_file,
                        {.name = "client_ca_file",
                         .doc = "when set, clients must present a certificate signed by these "
                                "PEM CAs",
                         .validator = util::CheckReadableFile}))
      .Size(&S::max_body, {.name = "max_body",
                           .doc = "largest request body; larger ones get 413",
                           .default_value = "4MiB"})
      .Int(&S::max_events, {.name = d.max_events_name,
                            .doc = d.max_events_doc,
                            .default_value = "1000",
                            .validator = IntInRange(1, 1000000)})
      .Int(&S::max_connections,
           {.name = "max_connections",
            .doc = "connections served at once; at the limit the one idle longest is closed "
                   "for a new client, and with every one busy the next waits in the kernel's "
                   "backlog",
            .default_value = "64",
            .validator = IntInRange(1, 100000)})
      .Int(&S::max_connections_per_client,
           {.name = "max_connections_per_client",
            .doc = "connections from one client address at most (at most max_connections); "
                   "at the limit its connection idle longest is closed for the new one, and "
                   "with every one busy the new one is refused",
            .default_value = "32",
            .validator = IntInRange(1, 100000)})
      .Add(&S::idle_timeout,
           {.name = "idle_timeout",
            .doc = "a connection that sends no complete request for this long is closed",
            .default_value = "30s"})
      .Add(&S::ack_timeout,
           {.name = "ack_timeout",
            .doc = "longest wait for a request's events to be stored before answering 503",
            .default_value = "30s"})
      .Check([](const S& s, const Params& p) {
        if (!s.basic_auth.user.empty() && !s.bearer_token.empty()) {
          return InvalidArgumentError(p.Location("basic_auth") +
                                      ": set bearer_token or basic_auth, not both");
        }
        return Status::Ok();
      });
}

const Options<HttpSourceOptions>& HttpSourceSchema() {
  using S = HttpSourceOptions;
  static const Options<S> o = [] {
    Options<S> o;
    AddPushServerOptions(o, {.listen = "",
                             .max_events_name = "max_events",
                             .max_events_doc = "most events in one request (at most "
                                               "pipeline.queue_capacity); more get 413"});
    o.Add(&S::paths, {.name = "paths",
                      .doc = "accepted paths and the topic each gives its events; unset: any "
                             "path, whose text (without the leading /) is the topic"})
        .Enum(&S::format,
              {.name = "format",
               .doc = "auto (NDJSON for an NDJSON Content-Type, else JSON), json or ndjson",
               .default_value = "auto"},
              {{"auto", BodyFormat::kAuto},
               {"json", BodyFormat::kJson},
               {"ndjson", BodyFormat::kNdjson}})
        .Add(&S::idempotency_header,
             {.name = "idempotency_header",
              .doc = "with stateful processors (windows): a request with this header is "
                     "remembered in the checkpoint, and one sent again with the same value "
                     "is answered 200 without being counted twice (422 for another body, 409 "
                     "while the first is in flight); empty: off",
              .default_value = "Idempotency-Key"})
        .Add(&S::idempotency_keep,
             {.name = "idempotency_keep",
              .doc = "how long an idempotency key is remembered after its request was "
                     "stored (at most 100,000 keys: beyond that the oldest go first)",
              .default_value = "24h",
              .validator = [](const ParamValue& v) {
                if (std::get<std::chrono::nanoseconds>(v).count() > 0) return Status::Ok();
                return InvalidArgumentError("must be more than 0");
              }});
    return o;
  }();
  return o;
}

}  // namespace seedance::sources
