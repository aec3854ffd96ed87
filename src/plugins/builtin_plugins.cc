#include "plugins/builtin_plugins.h"

#include "processors/fields/fields_processor.h"
#include "processors/lua/lua_processor.h"
#include "processors/watermark/watermark_processor.h"
#include "processors/window/window_processor.h"
#include "sinks/file/file_sink.h"
#include "sinks/http/http_sink.h"
#ifdef SEEDANCE_SINK_INFLUXDB
#include "sinks/influxdb/influxdb_sink.h"
#endif
#ifdef SEEDANCE_SINK_KAFKA
#include "sinks/kafka/kafka_sink.h"
#endif
#include "sinks/mqtt/mqtt_sink.h"
#ifdef SEEDANCE_SINK_NATS
#include "sinks/nats/nats_sink.h"
#endif
#include "sinks/otlp/otlp_sink.h"
#include "sinks/prometheus/remote_write_sink.h"
#include "sinks/stdout/stdout_sink.h"
#include "sources/generate/generate_source.h"
#include "sources/gpu/gpu_source.h"
#include "sources/http/http_source.h"
#include "sources/modbus/modbus_source.h"
#include "sources/mqtt/mqtt_source.h"
#include "sources/otlp/otlp_source.h"
#include "sources/prometheus/scrape_source.h"
#include "sources/stdin/stdin_source.h"
#include "sources/tail/tail_source.h"

namespace seedance {

void RegisterBuiltinPlugins(PluginRegistry& registry) {
  registry.Add(sources::MqttSourceFactory());
  registry.Add(sources::GenerateSourceFactory());
  registry.Add(sources::PrometheusScrapeSourceFactory());
  registry.Add(sources::HttpSourceFactory());
  registry.Add(sources::OtlpSourceFactory());
  registry.Add(sources::TailSourceFactory());
  registry.Add(sources::StdinSourceFactory());
  registry.Add(sources::GpuSourceFactory());
  registry.Add(sources::ModbusSourceFactory());
  registry.Add(processors::LuaProcessorFactory());
  registry.Add(processors::FieldsProcessorFactory());
  registry.Add(processors::WatermarkProcessorFactory());
  registry.Add(processors::WindowProcessorFactory());
  registry.Add(sinks::HttpSinkFactory());
#ifdef SEEDANCE_SINK_INFLUXDB
  registry.Add(sinks::InfluxDbSinkFactory());
#endif
#ifdef SEEDANCE_SINK_KAFKA
  registry.Add(sinks::KafkaSinkFactory());
#endif
  registry.Add(sinks::MqttSinkFactory());
#ifdef SEEDANCE_SINK_NATS
  registry.Add(sinks::NatsSinkFactory());
#endif
  registry.Add(sinks::OtlpSinkFactory());
  registry.Add(sinks::PrometheusRemoteWriteSinkFactory());
  registry.Add(sinks::StdoutSinkFactory());
  registry.Add(sinks::FileSinkFactory());
}

}  // namespace seedance
