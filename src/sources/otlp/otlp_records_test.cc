#include "sources/otlp/otlp_records.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <string>

#include "sources/otlp/otlp_json.h"
#include "util/json_check.h"
#include "util/protobuf_writer.h"

namespace seedance::sources {
namespace {

using util::ProtobufWriter;

// Builds messages the way an exporter would: each helper appends one field.
std::string KeyValue(std::string_view key, std::string_view string_value) {
  std::string out;
  ProtobufWriter w(out);
  w.Bytes(1, key);
  const size_t v = w.BeginMessage(2);
  w.Bytes(1, string_value);
  w.EndMessage(v);
  return out;
}

std::string Wrap(uint32_t field, std::string_view inner) {
  std::string out;
  ProtobufWriter(out).Bytes(field, inner);
  return out;
}

// An export request with one resource (service.name=svc) and one scope (lib 1.0) holding
// `records` (each a serialized record message).
std::string Request(const std::vector<std::string>& records) {
  std::string scope;
  ProtobufWriter sw(scope);
  sw.Bytes(1, "lib");
  sw.Bytes(2, "1.0");
  std::string scoped = Wrap(1, scope);
  for (const std::string& r : records) scoped += Wrap(2, r);
  // The resource after its scopes: fields may come in any order.
  std::string resource_scoped = Wrap(2, scoped) + Wrap(1, Wrap(1, KeyValue("service.name", "svc")));
  return Wrap(1, resource_scoped);
}

std::string LogRecord(std::string_view body, std::string_view trace_id = {},
                      std::string_view span_id = {}) {
  std::string out;
  ProtobufWriter w(out);
  w.Fixed64(1, 1700000000123456789);
  w.Varint(2, 9);
  w.Bytes(3, "INFO");
  const size_t b = w.BeginMessage(5);
  w.Bytes(1, body);
  w.EndMessage(b);
  w.Bytes(6, KeyValue("k", "v"));
  if (!trace_id.empty()) w.Bytes(9, trace_id);
  if (!span_id.empty()) w.Bytes(10, span_id);
  w.Fixed32(8, 1);
  return out;
}

rapidjson::Document Parse(const std::string& payload) {
  rapidjson::Document d;
  EXPECT_TRUE(ParseJson(payload, d).ok()) << payload;
  return d;
}

TEST(OtlpRecordsTest, LogRecordBecomesAnEventWithResourceScopeAndTraceparent) {
  const std::string trace(16, '\x11'), span(8, '\x22');
  auto batch = DecodeOtlpRequest(OtlpSignal::kLogs, Request({LogRecord("hello", trace, span)}), 100,
                                 1 << 20, 5);
  ASSERT_TRUE(batch.has_value()) << batch.error().message();
  ASSERT_EQ(batch->events.size(), 1u);
  EXPECT_TRUE(batch->refused.empty());
  const Event& e = batch->events[0];
  EXPECT_EQ(e.event_time_ns, 1700000000123456789);
  auto d = Parse(e.payload);
  EXPECT_STREQ(d["body"].GetString(), "hello");
  EXPECT_EQ(d["severity_number"].GetInt(), 9);
  EXPECT_STREQ(d["severity_text"].GetString(), "INFO");
  EXPECT_STREQ(d["attributes"]["k"].GetString(), "v");
  EXPECT_STREQ(d["resource"]["service.name"].GetString(), "svc");
  EXPECT_STREQ(d["scope"]["name"].GetString(), "lib");
  EXPECT_STREQ(d["scope"]["version"].GetString(), "1.0");
  EXPECT_EQ(d["time_unix_nano"].GetUint64(), 1700000000123456789u);
  EXPECT_STREQ(d["trace_id"].GetString(), "11111111111111111111111111111111");
  ASSERT_NE(e.FindHeader("traceparent"), nullptr);
  EXPECT_EQ(*e.FindHeader("traceparent"),
            "00-11111111111111111111111111111111-2222222222222222-01");
}

TEST(OtlpRecordsTest, MalformedRecordsAreRefusedAloneWithTheirReason) {
  std::string deep = "x";  // an AnyValue nested 200 arrays deep
  {
    std::string any;
    ProtobufWriter(any).Bytes(1, "leaf");
    for (int i = 0; i < 200; ++i) any = Wrap(5, Wrap(1, any));
    std::string rec;
    ProtobufWriter(rec).Bytes(5, any);
    deep = rec;
  }
  const std::string bad_utf8 = LogRecord("\xff\xfe");
  const std::string short_trace = LogRecord("x", "abc", std::string(8, '\1'));
  auto batch = DecodeOtlpRequest(
      OtlpSignal::kLogs, Request({LogRecord("ok"), deep, bad_utf8, short_trace}), 100, 1 << 20, 5);
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->events.size(), 1u);
  ASSERT_EQ(batch->refused.size(), 3u);
  EXPECT_NE(batch->refused[0].reason.find("nested deeper than 128"), std::string::npos);
  EXPECT_NE(batch->refused[1].reason.find("not UTF-8"), std::string::npos);
  EXPECT_NE(batch->refused[2].reason.find("trace_id"), std::string::npos);
  EXPECT_EQ(batch->refused[1].record, bad_utf8);
}

TEST(OtlpRecordsTest, FramingErrorsRefuseTheRequestAndLimitsHold) {
  auto garbage = DecodeOtlpRequest(OtlpSignal::kLogs, "\x0a\x7f", 100, 1 << 20, 5);
  ASSERT_FALSE(garbage.has_value());
  EXPECT_EQ(garbage.error().code(), StatusCode::kInvalidArgument);
  auto many = DecodeOtlpRequest(
      OtlpSignal::kLogs, Request({LogRecord("a"), LogRecord("b"), LogRecord("c")}), 2, 1 << 20, 5);
  ASSERT_FALSE(many.has_value());
  EXPECT_EQ(many.error().code(), StatusCode::kResourceExhausted);
  auto empty = DecodeOtlpRequest(OtlpSignal::kLogs, "", 100, 1 << 20, 5);
  // One 100 KB resource and 50 small records: 5 MB of events from a 100 KB body.
  std::string resource = Wrap(1, KeyValue("big", std::string(100000, 'x')));
  std::string scoped;
  for (int i = 0; i < 50; ++i) scoped += Wrap(2, LogRecord("r"));
  auto amplified = DecodeOtlpRequest(
      OtlpSignal::kLogs, Wrap(1, Wrap(1, resource) + Wrap(2, scoped)), 1000, 1 << 20, 5);
  ASSERT_FALSE(amplified.has_value());
  EXPECT_EQ(amplified.error().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(amplified.error().message().find("more than 1048576 bytes as events"),
            std::string::npos);
  // A metric with a 100 KB description and 200,000 points (2 MB): 20 GB of events, were the
  // bound checked only at the end of the metric; it stops at the eleventh point.
  std::string point;
  ProtobufWriter(point).Double(4, 1.0);
  std::string gauge;
  for (int i = 0; i < 200000; ++i) gauge += Wrap(1, point);
  std::string metric;
  ProtobufWriter mw(metric);
  mw.Bytes(1, "m");
  mw.Bytes(2, std::string(100000, 'd'));
  mw.Bytes(5, gauge);
  auto described = DecodeOtlpRequest(OtlpSignal::kMetrics, Request({metric}), 1000000, 1 << 20, 5);
  ASSERT_FALSE(described.has_value());
  EXPECT_EQ(described.error().code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->events.empty());
}

std::string Metric(std::string_view name, uint32_t type, std::string_view data) {
  std::string out;
  ProtobufWriter w(out);
  w.Bytes(1, name);
  w.Bytes(3, "By");
  w.Bytes(type, data);
  return out;
}

TEST(OtlpRecordsTest, EachDataPointIsAnEvent) {
  std::string gauge_point;
  {
    ProtobufWriter w(gauge_point);
    w.Bytes(7, KeyValue("cpu", "0"));
    w.Fixed64(3, 1000);
    w.Double(4, 0.25);
  }
  std::string sum_point;
  {
    ProtobufWriter w(sum_point);
    w.Fixed64(3, 2000);
    w.Fixed64(6, static_cast<uint64_t>(-7));  // as_int (sfixed64)
  }
  std::string sum = Wrap(1, sum_point);
  ProtobufWriter(sum).Varint(2, 2);
  ProtobufWriter(sum).Varint(3, 1);
  std::string hist_point;
  {
    ProtobufWriter w(hist_point);
    w.Fixed64(3, 3000);
    w.Fixed64(4, 6);
    w.Double(5, 12.5);
    for (uint64_t c : {1, 2, 3}) w.Fixed64(6, c);  // unpacked
    std::string bounds;
    for (double b : {1.0, 5.0}) {
      uint64_t bits;
      std::memcpy(&bits, &b, 8);
      for (int i = 0; i < 8; ++i) bounds.push_back(static_cast<char>(bits >> (8 * i)));
    }
    w.Bytes(7, bounds);  // packed
  }
  std::string bad_hist_point;
  ProtobufWriter(bad_hist_point).Fixed64(6, 1);  // two counts for no bounds: refused
  ProtobufWriter(bad_hist_point).Fixed64(6, 2);
  auto batch = DecodeOtlpRequest(
      OtlpSignal::kMetrics,
      Request({Metric("load", 5, Wrap(1, gauge_point)), Metric("requests", 7, sum),
               Metric("latency", 9, Wrap(1, hist_point) + Wrap(1, bad_hist_point))}),
      100, 1 << 20, 5);
  ASSERT_TRUE(batch.has_value()) << batch.error().message();
  ASSERT_EQ(batch->events.size(), 3u);
  ASSERT_EQ(batch->refused.size(), 1u);
  EXPECT_NE(batch->refused[0].reason.find("bucket_counts has 2 counts for 0"), std::string::npos);
  auto g = Parse(batch->events[0].payload);
  EXPECT_STREQ(g["name"].GetString(), "load");
  EXPECT_STREQ(g["type"].GetString(), "gauge");
  EXPECT_STREQ(g["unit"].GetString(), "By");
  EXPECT_DOUBLE_EQ(g["value"].GetDouble(), 0.25);
  EXPECT_STREQ(g["attributes"]["cpu"].GetString(), "0");
  EXPECT_EQ(batch->events[0].event_time_ns, 1000);
  auto s = Parse(batch->events[1].payload);
  EXPECT_EQ(s["value"].GetInt64(), -7);
  EXPECT_TRUE(s["is_monotonic"].GetBool());
  EXPECT_STREQ(s["aggregation_temporality"].GetString(), "cumulative");
  auto h = Parse(batch->events[2].payload);
  EXPECT_EQ(h["count"].GetUint64(), 6u);
  ASSERT_EQ(h["bucket_counts"].Size(), 3u);
  EXPECT_EQ(h["bucket_counts"][2].GetUint64(), 3u);
  ASSERT_EQ(h["explicit_bounds"].Size(), 2u);
  EXPECT_DOUBLE_EQ(h["explicit_bounds"][1].GetDouble(), 5.0);
}

TEST(OtlpRecordsTest, SpansNeedIdsAndCarryTheirTraceContext) {
  std::string span;
  {
    ProtobufWriter w(span);
    w.Bytes(1, std::string(16, '\xab'));
    w.Bytes(2, std::string(8, '\xcd'));
    w.Bytes(3, "k=v");
    w.Bytes(5, "GET /");
    w.Varint(6, 2);
    w.Fixed64(7, 500);
    w.Fixed64(8, 900);
    w.Fixed32(16, 1);
    const size_t st = w.BeginMessage(15);
    w.Varint(3, 2);
    w.Bytes(2, "boom");
    w.EndMessage(st);
  }
  std::string no_ids;
  ProtobufWriter(no_ids).Bytes(5, "nameless");
  auto batch = DecodeOtlpRequest(OtlpSignal::kTraces, Request({span, no_ids}), 100, 1 << 20, 5);
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->events.size(), 1u);
  ASSERT_EQ(batch->refused.size(), 1u);
  const Event& e = batch->events[0];
  EXPECT_EQ(e.event_time_ns, 500);
  EXPECT_EQ(*e.FindHeader("traceparent"),
            "00-abababababababababababababababab-cdcdcdcdcdcdcdcd-01");
  EXPECT_EQ(*e.FindHeader("tracestate"), "k=v");
  auto d = Parse(e.payload);
  EXPECT_STREQ(d["kind"].GetString(), "server");
  EXPECT_STREQ(d["status"]["code"].GetString(), "error");
  EXPECT_STREQ(d["status"]["message"].GetString(), "boom");
  EXPECT_EQ(d["end_time_unix_nano"].GetUint64(), 900u);
}

// An AnyValue of `levels` arrays around a string.
std::string NestedArrays(int levels) {
  std::string any;
  ProtobufWriter(any).Bytes(1, "leaf");
  for (int i = 0; i < levels; ++i) any = Wrap(5, Wrap(1, any));
  return any;
}

std::string KeyAnyValue(std::string_view key, std::string_view any) {
  std::string out;
  ProtobufWriter w(out);
  w.Bytes(1, key);
  w.Bytes(2, any);
  return out;
}

// Values nested to just under and just over the limit, wherever a record holds them: what is
// taken passes the payload checker the processing loop applies (no event taken with a 200
// only to land in `error` there), what is not is refused with the reason.
TEST(OtlpRecordsTest, NestingStopsWhereThePayloadCheckerDoes) {
  const std::string span_ids = Wrap(1, std::string(16, '\x01')) + Wrap(2, std::string(8, '\x02'));
  for (const std::string where : {"body", "attribute", "span event", "scope"}) {
    int taken = 0, refused = 0;
    for (int levels = 118; levels <= 132; ++levels) {
      const std::string any = NestedArrays(levels);
      OtlpSignal signal = OtlpSignal::kLogs;
      std::string body;
      if (where == "body") {
        body = Request({Wrap(5, any)});
      } else if (where == "attribute") {
        body = Request({Wrap(6, KeyAnyValue("k", any))});
      } else if (where == "span event") {
        signal = OtlpSignal::kTraces;
        body = Request({span_ids + Wrap(11, Wrap(3, KeyAnyValue("k", any)))});
      } else {
        const std::string scope = Wrap(1, Wrap(3, KeyAnyValue("k", any)));
        body = Wrap(1, Wrap(2, scope + Wrap(2, Wrap(5, Wrap(1, "x")))));
      }
      auto batch = DecodeOtlpRequest(signal, body, 100, 1 << 20, 5);
      if (!batch.has_value()) {
        EXPECT_NE(batch.error().message().find("nested deeper"), std::string::npos);
        ++refused;
        continue;
      }
      for (const Event& e : batch->events) {
        EXPECT_TRUE(CheckJson(e.payload).ok()) << where << ", " << levels << " levels";
        ++taken;
      }
      refused += static_cast<int>(batch->refused.size());
    }
    EXPECT_GT(taken, 0) << where;
    EXPECT_GT(refused, 0) << where;
  }
}

TEST(OtlpJsonTest, JsonReadsAsTheSameRecords) {
  const std::string json = R"({"resourceLogs":[{"resource":{"attributes":[
      {"key":"service.name","value":{"stringValue":"svc"}}]},
    "scopeLogs":[{"scope":{"name":"lib","version":"1.0"},"logRecords":[
      {"timeUnixNano":"1700000000123456789","severityNumber":9,"severityText":"INFO",
       "body":{"stringValue":"hello"},"attributes":[{"key":"k","value":{"stringValue":"v"}},
         {"key":"n","value":{"intValue":"-3"}},{"key":"b","value":{"bytesValue":"AAE="}},
         {"key":"l","value":{"arrayValue":{"values":[{"doubleValue":1.5},{"boolValue":true}]}}}],
       "traceId":"11111111111111111111111111111111","span_id":"2222222222222222","flags":1,
       "unknownField":{"ignored":true}}]}]}]})";
  auto protobuf = OtlpJsonToProtobuf(OtlpSignal::kLogs, json);
  ASSERT_TRUE(protobuf.has_value()) << protobuf.error().message();
  auto batch = DecodeOtlpRequest(OtlpSignal::kLogs, *protobuf, 100, 1 << 20, 5);
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->events.size(), 1u);
  const Event& e = batch->events[0];
  EXPECT_EQ(e.event_time_ns, 1700000000123456789);
  EXPECT_EQ(*e.FindHeader("traceparent"),
            "00-11111111111111111111111111111111-2222222222222222-01");
  auto d = Parse(e.payload);
  EXPECT_STREQ(d["body"].GetString(), "hello");
  EXPECT_EQ(d["attributes"]["n"].GetInt(), -3);
  EXPECT_STREQ(d["attributes"]["b"].GetString(), "AAE=");
  EXPECT_DOUBLE_EQ(d["attributes"]["l"][0].GetDouble(), 1.5);
  EXPECT_TRUE(d["attributes"]["l"][1].GetBool());
  EXPECT_STREQ(d["resource"]["service.name"].GetString(), "svc");
}

TEST(OtlpJsonTest, WrongTypesNameTheirPath) {
  auto r = OtlpJsonToProtobuf(OtlpSignal::kLogs,
                              R"({"resourceLogs":[{"scopeLogs":[{"logRecords":[
                                    {"timeUnixNano":"soon"}]}]}]})");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(),
            "OTLP/JSON: $.resourceLogs[0].scopeLogs[0].logRecords[0].timeUnixNano: expected an "
            "integer (a number or a decimal string)");
  EXPECT_FALSE(OtlpJsonToProtobuf(OtlpSignal::kTraces, "[").has_value());
  EXPECT_FALSE(OtlpJsonToProtobuf(OtlpSignal::kTraces, R"({"resourceSpans":[{"scopeSpans":[
      {"spans":[{"traceId":"xyz"}]}]}]})")
                   .has_value());
}

}  // namespace
}  // namespace seedance::sources
