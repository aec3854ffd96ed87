#include "plugins/builtin_plugins.h"

#include "processors/lua/lua_processor.h"
#include "processors/watermark/watermark_processor.h"
#include "processors/window/window_processor.h"
#include "sinks/file/file_sink.h"
#include "sinks/http/http_sink.h"
#include "sinks/influxdb/influxdb_sink.h"
#include "sinks/mqtt/mqtt_sink.h"
#include "sinks/stdout/stdout_sink.h"
#include "sources/generate/generate_source.h"
#include "sources/http/http_source.h"
#include "sources/mqtt/mqtt_source.h"
#include "sources/tail/tail_source.h"

namespace seedance {

void RegisterBuiltinPlugins(PluginRegistry& registry) {
  registry.Add(sources::MqttSourceFactory());
  registry.Add(sources::GenerateSourceFactory());
  registry.Add(sources::HttpSourceFactory());
  registry.Add(sources::TailSourceFactory());
  registry.Add(processors::LuaProcessorFactory());
  registry.Add(processors::WatermarkProcessorFactory());
  registry.Add(processors::WindowProcessorFactory());
  registry.Add(sinks::HttpSinkFactory());
  registry.Add(sinks::InfluxDbSinkFactory());
  registry.Add(sinks::MqttSinkFactory());
  registry.Add(sinks::StdoutSinkFactory());
  registry.Add(sinks::FileSinkFactory());
}

}  // namespace seedance
