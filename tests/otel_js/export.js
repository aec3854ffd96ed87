// The OpenTelemetry JS SDK as an application would run it: a LoggerProvider, a
// BasicTracerProvider and a MeterProvider exporting over OTLP/HTTP (protobuf) to the otlp source
// at argv[2], with their batch processors and the exporters' own retries. Each export the SDK is
// told succeeded is written to argv[4] ("log <id>", "span <id>", "point <name> <time ns>"); a
// failed one as "failed <signal> <count> <reason>". argv[3] records of each kind, then flush.
// Used by tests/integration/test_otlp_js_sdk.py.
"use strict";
const fs = require("fs");
const { context, trace } = require("@opentelemetry/api");
const { SeverityNumber } = require("@opentelemetry/api-logs");
const { ExportResultCode } = require("@opentelemetry/core");
const { OTLPLogExporter } = require("@opentelemetry/exporter-logs-otlp-proto");
const { OTLPMetricExporter } = require("@opentelemetry/exporter-metrics-otlp-proto");
const { OTLPTraceExporter } = require("@opentelemetry/exporter-trace-otlp-proto");
const { resourceFromAttributes } = require("@opentelemetry/resources");
const { LoggerProvider, BatchLogRecordProcessor } = require("@opentelemetry/sdk-logs");
const { MeterProvider, PeriodicExportingMetricReader } = require("@opentelemetry/sdk-metrics");
const { BasicTracerProvider, BatchSpanProcessor } = require("@opentelemetry/sdk-trace-base");

const [endpoint, countText, outFile] = process.argv.slice(2);
const count = Number(countText);
const exporterOptions = (signal) => ({ url: `${endpoint}/v1/${signal}`, timeoutMillis: 30000 });

function hrToNs(t) {
  return (BigInt(t[0]) * 1000000000n + BigInt(t[1])).toString();
}

// Writes down what the SDK was told about each export.
function recording(exporter, signal, idsOf) {
  return {
    export(items, done) {
      exporter.export(items, (result) => {
        if (result.code === ExportResultCode.SUCCESS) {
          fs.appendFileSync(outFile, idsOf(items).map((id) => `${signal} ${id}\n`).join(""));
        } else {
          const reason = String(result.error && result.error.message).replace(/\s+/g, " ");
          fs.appendFileSync(outFile, `failed ${signal} ${idsOf(items).length} ${reason}\n`);
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => (exporter.forceFlush ? exporter.forceFlush() : Promise.resolve()),
    selectAggregationTemporality: exporter.selectAggregationTemporality
      ? (k) => exporter.selectAggregationTemporality(k)
      : undefined,
  };
}

const resource = resourceFromAttributes({ "service.name": "js-client", "host.name": "gw-js" });
const batch = { scheduledDelayMillis: 50, maxExportBatchSize: 50, maxQueueSize: 100000 };

const tracerProvider = new BasicTracerProvider({
  resource,
  spanProcessors: [
    new BatchSpanProcessor(
      recording(new OTLPTraceExporter(exporterOptions("traces")), "span", (spans) =>
        spans.map((s) => s.attributes.i)),
      batch),
  ],
});
const loggerProvider = new LoggerProvider({
  resource,
  processors: [
    new BatchLogRecordProcessor({
      exporter: recording(new OTLPLogExporter(exporterOptions("logs")), "log", (records) =>
        records.map((r) => r.attributes.i)),
      ...batch,
    }),
  ],
});
const metricExporter = new OTLPMetricExporter(exporterOptions("metrics"));
const meterProvider = new MeterProvider({
  resource,
  readers: [
    new PeriodicExportingMetricReader({
      exporter: recording(metricExporter, "point", (resourceMetrics) => {
        const ids = [];
        for (const rm of [resourceMetrics])
          for (const sm of rm.scopeMetrics)
            for (const m of sm.metrics)
              for (const p of m.dataPoints) ids.push(`${m.descriptor.name} ${hrToNs(p.endTime)}`);
        return ids;
      }),
      exportIntervalMillis: 500,
      exportTimeoutMillis: 500,
    }),
  ],
});

const tracer = tracerProvider.getTracer("seedance-test", "1.0.0");
const logger = loggerProvider.getLogger("seedance-test", "1.0.0");
const made = meterProvider.getMeter("seedance-test").createCounter("parts.made", { unit: "1" });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

(async () => {
  for (let i = 0; i < count; ++i) {
    const span = tracer.startSpan(`op ${i}`, { attributes: { i } });
    logger.emit({
      body: `record ${i}`,
      severityNumber: SeverityNumber.WARN,
      severityText: "WARN",
      attributes: { i, line: "a" },
      context: trace.setSpan(context.active(), span),
    });
    made.add(1, { line: "a" });
    span.end();
    if (i % 20 === 19) await sleep(10);
  }
  await Promise.all([tracerProvider.forceFlush(), loggerProvider.forceFlush(),
    meterProvider.forceFlush()]);
  await Promise.all([tracerProvider.shutdown(), loggerProvider.shutdown(),
    meterProvider.shutdown()]);
  fs.appendFileSync(outFile, "done\n");
})();
