#include "observe/tracer.h"

#include <gtest/gtest.h>

#include <map>

#include "util/protobuf_reader.h"
#include "util/strings.h"

namespace seedance::observe {
namespace {

constexpr char kSampled[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
constexpr char kNotSampled[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";

TracingSettings Settings(double ratio = 0) {
  TracingSettings s;
  s.url = "http://127.0.0.1:1/v1/traces";  // nothing listens on port 1
  s.sample_ratio = ratio;
  s.timeout = std::chrono::milliseconds(500);
  return s;
}

Event Incoming(const char* traceparent) {
  Event e;
  e.source = "mqtt";
  e.topic = "site/line";
  e.ingest_time_ns = 1'000'000'000;
  if (traceparent != nullptr) e.SetHeader("traceparent", traceparent);
  return e;
}

uint64_t Spans(MetricsRegistry& m, const char* result) {
  return m.GetCounter("seedance_tracing_spans_total", "", {{"result", result}}).Value();
}

TEST(TracerTest, ASampledEventGetsAChildSpanAndCarriesIt) {
  MetricsRegistry metrics;
  Tracer tracer(Settings(), metrics);
  Event e = Incoming(kSampled);
  auto span = tracer.BeginProcess(e);
  ASSERT_TRUE(span.has_value());
  const auto incoming = *util::ParseTraceparent(kSampled);
  EXPECT_EQ(span->context.trace_id, incoming.trace_id);
  EXPECT_EQ(span->parent, incoming.span_id);
  EXPECT_NE(span->context.span_id, incoming.span_id);
  EXPECT_EQ(span->start_ns, e.ingest_time_ns);
  EXPECT_EQ(span->what, SpanRecord::What::kProcess);
  EXPECT_EQ(span->component, "mqtt");
  EXPECT_EQ(span->topic, "site/line");
  // The event now names Seedance's span as its parent.
  EXPECT_EQ(*e.FindHeader("traceparent"), util::FormatTraceparent(span->context));
}

TEST(TracerTest, AnUnsampledEventIsLeftAloneWithoutASampleRatio) {
  MetricsRegistry metrics;
  Tracer tracer(Settings(0), metrics);
  Event e = Incoming(kNotSampled);
  EXPECT_FALSE(tracer.BeginProcess(e).has_value());
  EXPECT_EQ(*e.FindHeader("traceparent"), kNotSampled);
  Event bare = Incoming(nullptr);
  EXPECT_FALSE(tracer.BeginProcess(bare).has_value());
  EXPECT_EQ(bare.FindHeader("traceparent"), nullptr);
  tracer.RecordDelivery(e, "http", 1, 2, "");  // not sampled: no span
  tracer.Stop();
  EXPECT_EQ(Spans(metrics, "export_failed"), 0u);
}

TEST(TracerTest, TheSampleRatioStartsNewTraces) {
  MetricsRegistry metrics;
  Tracer tracer(Settings(1), metrics);
  Event e = Incoming(nullptr);
  auto span = tracer.BeginProcess(e);
  ASSERT_TRUE(span.has_value());
  EXPECT_TRUE(span->context.sampled());
  EXPECT_EQ(span->parent, (std::array<uint8_t, 8>{}));  // a root
  auto carried = util::EventTraceContext(e);
  ASSERT_TRUE(carried.has_value());
  EXPECT_EQ(carried->trace_id, span->context.trace_id);
  // Two events, two traces.
  Event other = Incoming(nullptr);
  EXPECT_NE(tracer.BeginProcess(other)->context.trace_id, span->context.trace_id);
}

// Field number → the fields, of one protobuf message.
std::multimap<uint32_t, util::ProtobufField> Fields(std::string_view message) {
  std::multimap<uint32_t, util::ProtobufField> out;
  util::ProtobufReader r(message);
  util::ProtobufField f;
  while (r.Next(&f)) out.emplace(f.number, f);
  EXPECT_TRUE(r.error().empty()) << r.error();
  return out;
}

TEST(TracerTest, SpansAreEncodedAsAnExportTraceServiceRequest) {
  SpanRecord s;
  s.context = *util::ParseTraceparent(kSampled);
  s.context.span_id = {1, 2, 3, 4, 5, 6, 7, 8};
  s.parent = {9, 9, 9, 9, 9, 9, 9, 9};
  s.what = SpanRecord::What::kDeliver;
  s.component = "http";
  s.topic = "site/line";
  s.start_ns = 10;
  s.end_ns = 20;
  s.error = true;
  s.status_message = "HTTP 400";
  const std::string body = EncodeSpans({s}, "gw-7");
  auto request = Fields(body);
  ASSERT_EQ(request.count(1), 1u);  // one ResourceSpans
  auto resource_spans = Fields(request.find(1)->second.bytes);
  auto resource = Fields(resource_spans.find(1)->second.bytes);
  auto service = Fields(resource.find(1)->second.bytes);  // the first attribute
  EXPECT_EQ(service.find(1)->second.bytes, "service.name");
  EXPECT_EQ(Fields(service.find(2)->second.bytes).find(1)->second.bytes, "gw-7");
  auto scope_spans = Fields(resource_spans.find(2)->second.bytes);
  EXPECT_EQ(Fields(scope_spans.find(1)->second.bytes).find(1)->second.bytes, "seedance");
  ASSERT_EQ(scope_spans.count(2), 1u);
  auto span = Fields(scope_spans.find(2)->second.bytes);
  EXPECT_EQ(span.find(1)->second.bytes,
            std::string_view(reinterpret_cast<const char*>(s.context.trace_id.data()), 16));
  EXPECT_EQ(span.find(2)->second.bytes, "\x01\x02\x03\x04\x05\x06\x07\x08");
  EXPECT_EQ(span.find(4)->second.bytes, "\x09\x09\x09\x09\x09\x09\x09\x09");
  EXPECT_EQ(span.find(5)->second.bytes, "deliver http");
  EXPECT_EQ(span.find(6)->second.number_value, 4u);  // SPAN_KIND_PRODUCER
  EXPECT_EQ(span.find(7)->second.number_value, 10u);
  EXPECT_EQ(span.find(8)->second.number_value, 20u);
  ASSERT_EQ(span.count(9), 3u);
  std::map<std::string_view, std::string_view> attributes;
  for (auto [it, end] = span.equal_range(9); it != end; ++it) {
    auto kv = Fields(it->second.bytes);
    attributes[kv.find(1)->second.bytes] = Fields(kv.find(2)->second.bytes).find(1)->second.bytes;
  }
  EXPECT_EQ(attributes["messaging.destination.name"], "site/line");
  EXPECT_EQ(attributes["messaging.operation.type"], "send");
  EXPECT_EQ(attributes["seedance.sink"], "http");
  auto status = Fields(span.find(15)->second.bytes);
  EXPECT_EQ(status.find(2)->second.bytes, "HTTP 400");
  EXPECT_EQ(status.find(3)->second.number_value, 2u);  // STATUS_CODE_ERROR
  EXPECT_EQ(span.find(16)->second.number_value, 1u);   // flags: sampled
  // A root span has no parent_span_id.
  s.parent = {};
  EXPECT_EQ(
      Fields(
          Fields(Fields(Fields(EncodeSpans({s}, "x")).find(1)->second.bytes).find(2)->second.bytes)
              .find(2)
              ->second.bytes)
          .count(4),
      0u);
}

TEST(TracerTest, ASpanKeepsABoundedValidPieceOfLongOrMalformedText) {
  MetricsRegistry metrics;
  Tracer tracer(Settings(), metrics);
  Event e = Incoming(kSampled);
  e.topic = std::string(65535, 't');
  auto span = tracer.BeginProcess(e);
  ASSERT_TRUE(span.has_value());
  EXPECT_LE(span->topic.size(), Tracer::kMaxTopic + 32);  // with "... (N more bytes)"
  e.topic = "bad\xff\xfe";
  EXPECT_TRUE(util::IsValidUtf8(tracer.BeginProcess(e)->topic));
}

TEST(TracerTest, TheQueueIsBoundedAndAFailedExportDropsItsSpans) {
  MetricsRegistry metrics;
  TracingSettings settings = Settings();
  settings.max_queued_spans = 3;
  Tracer tracer(settings, metrics);
  Event e = Incoming(kSampled);
  for (int i = 0; i < 5; ++i) tracer.RecordDelivery(e, "http", 1, 2, "");
  EXPECT_EQ(Spans(metrics, "queue_full"), 2u);
  tracer.Start();
  tracer.Stop();  // one last export, to a port where nothing listens
  EXPECT_EQ(Spans(metrics, "export_failed"), 3u);
  EXPECT_EQ(Spans(metrics, "exported"), 0u);
}

}  // namespace
}  // namespace seedance::observe
