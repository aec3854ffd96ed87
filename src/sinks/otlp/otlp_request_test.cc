#include "sinks/otlp/otlp_request.h"

#include <gtest/gtest.h>

#include <bit>
#include <map>

#include "util/protobuf_reader.h"
#include "util/protobuf_writer.h"

namespace seedance::sinks {
namespace {

using util::ProtobufField;
using util::ProtobufReader;

// Every field of a message, by number (repeated ones in order).
std::multimap<uint32_t, ProtobufField> Fields(std::string_view message) {
  std::multimap<uint32_t, ProtobufField> out;
  ProtobufReader r(message);
  ProtobufField f;
  while (r.Next(&f)) out.emplace(f.number, f);
  EXPECT_TRUE(r.error().empty()) << r.error();
  return out;
}

std::string_view One(const std::multimap<uint32_t, ProtobufField>& m, uint32_t n) {
  EXPECT_EQ(m.count(n), 1u) << "field " << n;
  auto it = m.find(n);
  return it == m.end() ? std::string_view() : it->second.bytes;
}

Event OtlpEvent(std::string payload) {
  Event e;
  e.topic = "site/north/climate";
  e.source = "mqtt";
  e.payload = std::move(payload);
  e.event_time_ns = 1700000000123456789;
  e.ingest_time_ns = 1700000000223456789;
  return e;
}

// The attributes (KeyValue with a string value) of a record.
std::map<std::string, std::string> StringAttributes(
    const std::multimap<uint32_t, ProtobufField>& record, uint32_t field) {
  std::map<std::string, std::string> out;
  auto [from, to] = record.equal_range(field);
  for (auto it = from; it != to; ++it) {
    auto kv = Fields(it->second.bytes);
    auto value = Fields(One(kv, 2));
    if (value.count(1)) out[std::string(One(kv, 1))] = std::string(One(value, 1));
  }
  return out;
}

TEST(OtlpRequestTest, ALogRecordCarriesTimesBodySeverityAttributesAndTraceContext) {
  Batch batch;
  batch.events.push_back(OtlpEvent(R"({"level":"WARN","msg":"hot","t":21.5,"n":3,"tags":["a"]})"));
  batch.events[0].SetHeader("traceparent",
                            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  LogMapping m;
  m.severity_field = {"level"};
  m.attributes.emplace_back("site", *EventTemplate::Parse("{topic.2}", "site"));
  std::string out;
  AppendLogsRequest(batch, m, {{"service.name", "gw"}}, out);
  auto request = Fields(out);
  auto resource_logs = Fields(One(request, 1));
  auto resource = Fields(One(resource_logs, 1));
  EXPECT_EQ(StringAttributes(resource, 1),
            (std::map<std::string, std::string>{{"service.name", "gw"}}));
  auto scope_logs = Fields(One(resource_logs, 2));
  EXPECT_EQ(One(Fields(One(scope_logs, 1)), 1), "seedance");
  auto record = Fields(One(scope_logs, 2));
  EXPECT_EQ(record.find(1)->second.number_value, 1700000000123456789u);
  EXPECT_EQ(record.find(11)->second.number_value, 1700000000223456789u);
  EXPECT_EQ(record.find(2)->second.number_value, 13u);  // SEVERITY_NUMBER_WARN
  EXPECT_EQ(One(record, 3), "WARN");
  EXPECT_EQ(StringAttributes(record, 6), (std::map<std::string, std::string>{
                                             {"messaging.destination.name", "site/north/climate"},
                                             {"seedance.source", "mqtt"},
                                             {"site", "north"}}));
  EXPECT_EQ(record.find(8)->second.number_value, 1u);
  EXPECT_EQ(One(record, 9).size(), 16u);
  EXPECT_EQ(static_cast<unsigned char>(One(record, 9)[0]), 0x4b);
  EXPECT_EQ(One(record, 10).size(), 8u);
  // The body: a kvlist of the payload's members, typed.
  auto body = Fields(One(record, 5));
  auto kvlist = Fields(One(body, 6));
  std::map<std::string, std::multimap<uint32_t, ProtobufField>> members;
  auto [from, to] = kvlist.equal_range(1);
  for (auto it = from; it != to; ++it) {
    auto kv = Fields(it->second.bytes);
    members[std::string(One(kv, 1))] = Fields(One(kv, 2));
  }
  ASSERT_EQ(members.size(), 5u);
  EXPECT_EQ(One(members["msg"], 1), "hot");
  EXPECT_EQ(std::bit_cast<double>(members["t"].find(4)->second.number_value), 21.5);
  EXPECT_EQ(members["n"].find(3)->second.number_value, 3u);
  auto array = Fields(One(members["tags"], 5));
  EXPECT_EQ(One(Fields(One(array, 1)), 1), "a");
}

TEST(OtlpRequestTest, APayloadThatIsNotJsonIsAStringOrBytesBody) {
  Batch batch;
  batch.events.push_back(OtlpEvent("plain text"));
  batch.events[0].format = PayloadFormat::kRaw;
  batch.events.push_back(OtlpEvent(std::string("\xff\x00", 2)));
  batch.events[1].format = PayloadFormat::kRaw;
  std::string out;
  AppendLogsRequest(batch, {}, {}, out);
  auto scope_logs = Fields(One(Fields(One(Fields(out), 1)), 2));
  auto [from, to] = scope_logs.equal_range(2);
  ASSERT_EQ(std::distance(from, to), 2);
  EXPECT_EQ(One(Fields(One(Fields(from->second.bytes), 5)), 1), "plain text");
  EXPECT_EQ(One(Fields(One(Fields(std::next(from)->second.bytes), 5)), 7),
            std::string_view("\xff\x00", 2));
}

TEST(OtlpRequestTest, MetricsGroupPointsByName) {
  std::vector<SeriesSample> samples = {
      {.labels = {{"__name__", "a.b"}, {"k", "1"}}, .value = 1.5, .timestamp_ns = 10},
      {.labels = {{"__name__", "c"}}, .value = 2, .timestamp_ns = 20},
      {.labels = {{"__name__", "a.b"}, {"k", "2"}}, .value = 3, .timestamp_ns = 30}};
  std::string out;
  AppendMetricsRequest(samples, {{"service.name", "s"}}, out);
  auto scope = Fields(One(Fields(One(Fields(out), 1)), 2));
  auto [from, to] = scope.equal_range(2);
  ASSERT_EQ(std::distance(from, to), 2);
  auto first = Fields(from->second.bytes);
  EXPECT_EQ(One(first, 1), "a.b");
  auto points = Fields(One(first, 5));
  auto [p0, p1] = points.equal_range(1);
  ASSERT_EQ(std::distance(p0, p1), 2);
  auto point = Fields(p0->second.bytes);
  EXPECT_EQ(point.find(3)->second.number_value, 10u);
  EXPECT_EQ(std::bit_cast<double>(point.find(4)->second.number_value), 1.5);
  EXPECT_EQ(StringAttributes(point, 7), (std::map<std::string, std::string>{{"k", "1"}}));
}

TEST(OtlpRequestTest, AnswersSayWhatWasRejected) {
  std::string body;
  util::ProtobufWriter w(body);
  const size_t p = w.BeginMessage(1);
  w.Int64(1, 3);
  w.Bytes(2, "3 records had no body");
  w.EndMessage(p);
  OtlpAnswer a = ReadOtlpAnswer(body, "application/x-protobuf", false);
  EXPECT_EQ(a.rejected, 3);
  EXPECT_EQ(a.message, "3 records had no body");
  a = ReadOtlpAnswer(R"({"partialSuccess":{"rejectedLogRecords":"2","errorMessage":"no"}})",
                     "application/json", false);
  EXPECT_EQ(a.rejected, 2);
  EXPECT_EQ(a.message, "no");
  EXPECT_EQ(ReadOtlpAnswer("", "application/x-protobuf", false).rejected, 0);
  std::string status;
  util::ProtobufWriter s(status);
  s.Varint(1, 3);
  s.Bytes(2, "bad body");
  EXPECT_EQ(ReadOtlpAnswer(status, "application/x-protobuf", true).message, "bad body");
  EXPECT_EQ(ReadOtlpAnswer("\x0a\xff", "application/x-protobuf", false).rejected, 0);
  EXPECT_EQ(SeverityNumber("Error"), 17);
  EXPECT_EQ(SeverityNumber("loud"), 0);
}

TEST(OtlpRequestTest, SpanPayloadsBecomeSpansGroupedByTheirResourceAndScope) {
  Batch batch;
  // As the otlp source writes spans.
  batch.events.push_back(OtlpEvent(R"({"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736",
      "span_id":"00f067aa0ba902b7","parent_span_id":"1111111111111111","trace_state":"v=1",
      "flags":1,"name":"GET /","kind":"server","start_time_unix_nano":1700000000000000000,
      "end_time_unix_nano":1700000000500000000,"attributes":{"http.status":200},
      "events":[{"time_unix_nano":1700000000100000000,"name":"retry","attributes":{}}],
      "links":[{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"2222222222222222"}],
      "status":{"code":"error","message":"boom"},
      "resource":{"service.name":"checkout"},"scope":{"name":"lib","version":"2"}})"));
  batch.events.push_back(OtlpEvent(R"({"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736",
      "span_id":"00f067aa0ba902b8","resource":{"service.name":"checkout"},
      "scope":{"name":"lib","version":"2"}})"));
  batch.events.push_back(OtlpEvent(R"({"trace_id":"abc","span_id":"00f067aa0ba902b8"})"));
  batch.events.push_back(OtlpEvent(R"({"trace_id":"5bf92f3577b34da6a3ce929d0e0e4736",
      "span_id":"00f067aa0ba902b9","kind":3})"));
  std::string body;
  std::vector<RejectedEvent> unwritable;
  AppendTracesRequest(batch, LogMapping{}, {{"service.name", "gw"}}, body, unwritable);
  ASSERT_EQ(unwritable.size(), 1u);
  EXPECT_EQ(unwritable[0].index, 2u);
  EXPECT_NE(unwritable[0].reason.find("not a span"), std::string::npos);
  auto request = Fields(body);
  ASSERT_EQ(request.count(1), 2u);  // two resources: checkout's, and the sink's for the last
  auto it = request.find(1);
  auto checkout = Fields(it->second.bytes);
  EXPECT_EQ(StringAttributes(Fields(One(checkout, 1)), 1).at("service.name"), "checkout");
  auto scope_spans = Fields(One(checkout, 2));
  auto scope = Fields(One(scope_spans, 1));
  EXPECT_EQ(One(scope, 1), "lib");
  EXPECT_EQ(One(scope, 2), "2");
  ASSERT_EQ(scope_spans.count(2), 2u);
  auto span = Fields(scope_spans.find(2)->second.bytes);
  EXPECT_EQ(One(span, 1).size(), 16u);
  EXPECT_EQ(static_cast<uint8_t>(One(span, 2)[7]), 0xb7);
  EXPECT_EQ(static_cast<uint8_t>(One(span, 4)[0]), 0x11);
  EXPECT_EQ(One(span, 3), "v=1");
  EXPECT_EQ(One(span, 5), "GET /");
  EXPECT_EQ(span.find(6)->second.number_value, 2u);  // server
  EXPECT_EQ(span.find(7)->second.number_value, 1700000000000000000u);
  EXPECT_EQ(span.find(8)->second.number_value, 1700000000500000000u);
  EXPECT_EQ(span.find(16)->second.number_value, 1u);
  auto status = Fields(One(span, 15));
  EXPECT_EQ(status.find(3)->second.number_value, 2u);  // error
  EXPECT_EQ(One(status, 2), "boom");
  EXPECT_EQ(One(Fields(One(span, 11)), 2), "retry");
  EXPECT_EQ(static_cast<uint8_t>(One(Fields(One(span, 13)), 2)[7]), 0x22);
  // The second span: the topic names it, the event time times it.
  auto second = Fields(std::next(scope_spans.find(2))->second.bytes);
  EXPECT_EQ(One(second, 5), "site/north/climate");
  EXPECT_EQ(second.find(7)->second.number_value, 1700000000123456789u);
  // The last: the sink's resource, seedance's scope, its kind as a number.
  auto other = Fields(std::next(it)->second.bytes);
  EXPECT_EQ(StringAttributes(Fields(One(other, 1)), 1).at("service.name"), "gw");
  auto other_scope = Fields(One(other, 2));
  EXPECT_EQ(One(Fields(One(other_scope, 1)), 1), "seedance");
  EXPECT_EQ(Fields(One(other_scope, 2)).find(6)->second.number_value, 3u);
}

}  // namespace
}  // namespace seedance::sinks
