#include "sinks/influxdb/influxdb_sink.h"

#include <fmt/format.h>

#include <unordered_map>

#include "seedance/options.h"
#include "sinks/common/http_batch_sink.h"
#include "sinks/influxdb/line_protocol.h"
#include "sinks/influxdb/write_error.h"
#include "util/strings.h"

namespace seedance::sinks {
namespace {

enum class InfluxApi { kV1, kV2 };

struct InfluxSinkOptions : HttpBatchOptions {
  InfluxApi api = InfluxApi::kV1;
  std::string database;
  std::string retention_policy;
  std::string username;
  std::string password;
  std::string org;
  std::string bucket;
  std::string token;
  std::string measurement;
  StringPairs tags;
  std::vector<std::string> fields;
  Precision precision = Precision::kNanoseconds;
};

// RFC 3986 percent-encoding of a query parameter's value.
std::string QueryValue(std::string_view s) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      fmt::format_to(std::back_inserter(out), "%{:02X}", u);
    }
  }
  return out;
}

// The write URL: the endpoint's path, then the API's and its query.
std::string WriteUrl(const InfluxSinkOptions& o) {
  std::string base = o.url_text;
  if (const size_t q = base.find('?'); q != std::string::npos) base.resize(q);
  while (base.ends_with('/')) base.pop_back();
  const std::string_view precision = PrecisionName(o.precision);
  if (o.api == InfluxApi::kV2) {
    return fmt::format("{}/api/v2/write?org={}&bucket={}&precision={}", base, QueryValue(o.org),
                       QueryValue(o.bucket), precision);
  }
  std::string url =
      fmt::format("{}/write?db={}&precision={}", base, QueryValue(o.database), precision);
  if (!o.retention_policy.empty()) url += "&rp=" + QueryValue(o.retention_policy);
  return url;
}

class LineProtocolCodec final : public HttpBatchCodec {
 public:
  explicit LineProtocolCodec(PointMapping mapping) : mapping_(std::move(mapping)) {}

  std::string_view Encode(const Batch& batch, std::string& body,
                          std::vector<RejectedEvent>& unwritable) const override {
    std::string why;
    for (size_t i = 0; i < batch.events.size(); ++i) {
      if (!AppendPoint(mapping_, batch.events[i], body, &why)) {
        unwritable.push_back({i, "influxdb: " + why});
      }
    }
    return "text/plain; charset=utf-8";
  }

  // 400: InfluxDB refused points, and took the rest. The lines it names go to `rejected`;
  // when it refused some without naming them, the batch is sent again in halves.
  AttemptOutcome Outcome(const Batch& batch, const http::Answer& a) const override {
    if (a.status != 400) return HttpBatchCodec::Outcome(batch, a);
    // The line each event was sent as (again: the error path only).
    std::unordered_multimap<std::string, size_t> lines;
    std::string line, why;
    size_t longest = 0;
    for (size_t i = 0; i < batch.events.size(); ++i) {
      line.clear();
      if (!AppendPoint(mapping_, batch.events[i], line, &why)) continue;
      line.pop_back();  // '\n'
      longest = std::max(longest, line.size());
      lines.emplace(line, i);
    }
    const InfluxWriteError e = ParseInfluxWriteError(
        a.body, longest, [&](std::string_view l) { return lines.count(std::string(l)) > 0; });
    if (lines.size() <= 1) return AttemptOutcome::Rejected("influxdb: HTTP 400: " + e.message);
    const bool all_named =
        !e.unparsed.empty() && e.unparsed.size() == e.mentions && e.dropped.value_or(0) == 0;
    if (!all_named) {
      return AttemptOutcome::Bisect(
          fmt::format("influxdb refused points without naming each ({})", e.message));
    }
    AttemptOutcome outcome = AttemptOutcome::Delivered();
    for (const auto& u : e.unparsed) {
      auto [from, to] = lines.equal_range(u.line);
      for (auto it = from; it != to; ++it) {
        outcome.rejected.push_back({it->second, fmt::format("influxdb: unable to parse: {}",
                                                            util::SanitizeText(u.why, 300))});
      }
      lines.erase(u.line);  // named twice: rejected once
    }
    return outcome;
  }

 private:
  PointMapping mapping_;
};

const Options<InfluxSinkOptions>& InfluxSinkSchema() {
  using S = InfluxSinkOptions;
  static const Options<S> o = [] {
    Options<S> o;
    HttpBatchKeys(o, "InfluxDB's URL, e.g. http://127.0.0.1:8086 (the API path is added)");
    o.Enum(&S::api,
           {.name = "api",
            .doc = "v1 (/write: database, retention_policy, username, password) or v2 "
                   "(/api/v2/write: org, bucket, token)",
            .default_value = "v1"},
           {{"v1", InfluxApi::kV1}, {"v2", InfluxApi::kV2}})
        .Add(&S::database, {.name = "database", .doc = "v1: the database to write to"})
        .Add(&S::retention_policy,
             {.name = "retention_policy",
              .doc = "v1: the retention policy; the database's default when unset"})
        .Add(&S::username, {.name = "username", .doc = "v1: user name (HTTP basic authentication)"})
        .Add(&S::password, {.name = "password", .doc = "v1: password, e.g. \"${INFLUX_PASSWORD}\""})
        .Add(&S::org, {.name = "org", .doc = "v2: the organization"})
        .Add(&S::bucket, {.name = "bucket", .doc = "v2: the bucket to write to"})
        .Add(&S::token, {.name = "token", .doc = "v2: API token, e.g. \"${INFLUX_TOKEN}\""})
        .Add(&S::measurement,
             {.name = "measurement",
              .doc = "the measurement: text with placeholders ({topic}, {topic.N}, "
                     "{payload.FIELD}, {header.NAME}), e.g. \"{topic.1}\"",
              .required = true,
              .validator = TemplateValidator("measurement")})
        .Add(&S::tags,
             {.name = "tags",
              .doc = "tag key: value with placeholders, e.g. device: \"{payload.device}\"; "
                     "a tag with no value for an event is left out"})
        .Add(&S::fields,
             {.name = "fields",
              .doc = "payload fields to write (dotted paths); every top-level number, boolean and "
                     "string no tag takes when unset"})
        .Enum(&S::precision,
              {.name = "precision",
               .doc = "the unit of the point's time (the event time): ns, us, ms or s",
               .default_value = "ns"},
              PrecisionChoices())
        .Check([](const S& s, const Params& p) -> Status {
          if (s.api == InfluxApi::kV1 && s.database.empty()) {
            return InvalidArgumentError(p.Location("api") + ": api v1 needs database");
          }
          if (s.api == InfluxApi::kV2 && (s.org.empty() || s.bucket.empty() || s.token.empty())) {
            return InvalidArgumentError(p.Location("api") + ": api v2 needs org, bucket and token");
          }
          if (s.api == InfluxApi::kV2 && (!s.database.empty() || !s.username.empty())) {
            return InvalidArgumentError(p.Location("database") +
                                        ": database, username and password are for api v1");
          }
          if (s.api == InfluxApi::kV1 &&
              (!s.org.empty() || !s.bucket.empty() || !s.token.empty())) {
            return InvalidArgumentError(p.Location("org") +
                                        ": org, bucket and token are for api v2 (api: v2)");
          }
          auto mapping = MakePointMapping(s.measurement, s.tags, s.fields, s.precision);
          if (!mapping)
            return InvalidArgumentError(p.Location("tags") + ": " + mapping.error().message());
          return Status::Ok();
        });
    return o;
  }();
  return o;
}

}  // namespace

SinkFactory InfluxDbSinkFactory() {
  SinkFactory f;
  f.info.type = "influxdb";
  f.info.kind = PluginKind::kSink;
  f.info.summary = "Writes events as points to InfluxDB (line protocol; API v1 or v2).";
  // InfluxDB's own advice: batches of thousands of points. 3 ms as the http sink.
  f.delivery = {.batch_linger = "2ms", .concurrent = true, .timeout = true};  // as http
  f.info.params = InfluxSinkSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Sink>> {
    SEEDANCE_ASSIGN_OR_RETURN(InfluxSinkOptions o, InfluxSinkSchema().Bind(p));
    SEEDANCE_ASSIGN_OR_RETURN(PointMapping mapping,
                              MakePointMapping(o.measurement, o.tags, o.fields, o.precision));
    o.url_text = WriteUrl(o);
    if (o.api == InfluxApi::kV2) {
      o.headers.emplace_back("Authorization", "Token " + o.token);
    } else if (!o.username.empty() || !o.password.empty()) {
      std::string basic = "Basic ";
      util::AppendBase64(basic, o.username + ":" + o.password);
      o.headers.emplace_back("Authorization", std::move(basic));
    }
    SEEDANCE_RETURN_IF_ERROR(CheckHeaderFields(ParamValue(o.headers)));
    return MakeHttpBatchSink(static_cast<HttpBatchOptions&&>(std::move(o)),
                             std::make_unique<LineProtocolCodec>(std::move(mapping)), ctx);
  };
  return f;
}

}  // namespace seedance::sinks
