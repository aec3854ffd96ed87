"""The OTLP messages the tests read and write (opentelemetry-proto's field numbers and types,
logs, metrics and traces), as Python classes made by Debian's python3-protobuf from descriptors built
here: an independent protobuf implementation decodes what Seedance encodes."""
from google.protobuf import descriptor_pb2, message_factory

F = descriptor_pb2.FieldDescriptorProto
T = {"string": F.TYPE_STRING, "bytes": F.TYPE_BYTES, "bool": F.TYPE_BOOL, "int64": F.TYPE_INT64,
     "double": F.TYPE_DOUBLE, "fixed64": F.TYPE_FIXED64, "fixed32": F.TYPE_FIXED32,
     "uint32": F.TYPE_UINT32, "sfixed64": F.TYPE_SFIXED64, "int32": F.TYPE_INT32,
     "enum": F.TYPE_INT32}
PACKAGE = "otlp.test"

# message: [(name, number, type or message name, repeated, oneof index)]
MESSAGES = {
    "AnyValue": [("string_value", 1, "string", False, 0), ("bool_value", 2, "bool", False, 0),
                 ("int_value", 3, "int64", False, 0), ("double_value", 4, "double", False, 0),
                 ("array_value", 5, "ArrayValue", False, 0),
                 ("kvlist_value", 6, "KeyValueList", False, 0),
                 ("bytes_value", 7, "bytes", False, 0)],
    "ArrayValue": [("values", 1, "AnyValue", True, None)],
    "KeyValueList": [("values", 1, "KeyValue", True, None)],
    "KeyValue": [("key", 1, "string", False, None), ("value", 2, "AnyValue", False, None)],
    "InstrumentationScope": [("name", 1, "string", False, None),
                             ("version", 2, "string", False, None),
                             ("attributes", 3, "KeyValue", True, None)],
    "Resource": [("attributes", 1, "KeyValue", True, None)],
    "LogRecord": [("time_unix_nano", 1, "fixed64", False, None),
                  ("observed_time_unix_nano", 11, "fixed64", False, None),
                  ("severity_number", 2, "enum", False, None),
                  ("severity_text", 3, "string", False, None),
                  ("body", 5, "AnyValue", False, None),
                  ("attributes", 6, "KeyValue", True, None),
                  ("dropped_attributes_count", 7, "uint32", False, None),
                  ("flags", 8, "fixed32", False, None), ("trace_id", 9, "bytes", False, None),
                  ("span_id", 10, "bytes", False, None)],
    "ScopeLogs": [("scope", 1, "InstrumentationScope", False, None),
                  ("log_records", 2, "LogRecord", True, None),
                  ("schema_url", 3, "string", False, None)],
    "ResourceLogs": [("resource", 1, "Resource", False, None),
                     ("scope_logs", 2, "ScopeLogs", True, None),
                     ("schema_url", 3, "string", False, None)],
    "ExportLogsServiceRequest": [("resource_logs", 1, "ResourceLogs", True, None)],
    "ExportLogsPartialSuccess": [("rejected_log_records", 1, "int64", False, None),
                                 ("error_message", 2, "string", False, None)],
    "ExportLogsServiceResponse": [("partial_success", 1, "ExportLogsPartialSuccess", False,
                                   None)],
    "NumberDataPoint": [("attributes", 7, "KeyValue", True, None),
                        ("start_time_unix_nano", 2, "fixed64", False, None),
                        ("time_unix_nano", 3, "fixed64", False, None),
                        ("as_double", 4, "double", False, 0), ("as_int", 6, "sfixed64", False, 0),
                        ("flags", 8, "uint32", False, None)],
    "Gauge": [("data_points", 1, "NumberDataPoint", True, None)],
    "Sum": [("data_points", 1, "NumberDataPoint", True, None),
            ("aggregation_temporality", 2, "enum", False, None),
            ("is_monotonic", 3, "bool", False, None)],
    "HistogramDataPoint": [("attributes", 9, "KeyValue", True, None),
                           ("start_time_unix_nano", 2, "fixed64", False, None),
                           ("time_unix_nano", 3, "fixed64", False, None),
                           ("count", 4, "fixed64", False, None), ("sum", 5, "double", False, None),
                           ("bucket_counts", 6, "fixed64", True, None),
                           ("explicit_bounds", 7, "double", True, None)],
    "Histogram": [("data_points", 1, "HistogramDataPoint", True, None),
                  ("aggregation_temporality", 2, "enum", False, None)],
    "Metric": [("name", 1, "string", False, None), ("description", 2, "string", False, None),
               ("unit", 3, "string", False, None), ("gauge", 5, "Gauge", False, 0),
               ("sum", 7, "Sum", False, 0), ("histogram", 9, "Histogram", False, 0)],
    "ScopeMetrics": [("scope", 1, "InstrumentationScope", False, None),
                     ("metrics", 2, "Metric", True, None)],
    "ResourceMetrics": [("resource", 1, "Resource", False, None),
                        ("scope_metrics", 2, "ScopeMetrics", True, None)],
    "ExportMetricsServiceRequest": [("resource_metrics", 1, "ResourceMetrics", True, None)],
    "ExportMetricsPartialSuccess": [("rejected_data_points", 1, "int64", False, None),
                                    ("error_message", 2, "string", False, None)],
    "ExportMetricsServiceResponse": [("partial_success", 1, "ExportMetricsPartialSuccess", False,
                                      None)],
    "SpanEvent": [("time_unix_nano", 1, "fixed64", False, None), ("name", 2, "string", False, None),
                  ("attributes", 3, "KeyValue", True, None)],
    "SpanLink": [("trace_id", 1, "bytes", False, None), ("span_id", 2, "bytes", False, None),
                 ("trace_state", 3, "string", False, None),
                 ("attributes", 4, "KeyValue", True, None)],
    "SpanStatus": [("message", 2, "string", False, None), ("code", 3, "enum", False, None)],
    "Span": [("trace_id", 1, "bytes", False, None), ("span_id", 2, "bytes", False, None),
             ("trace_state", 3, "string", False, None),
             ("parent_span_id", 4, "bytes", False, None), ("flags", 16, "fixed32", False, None),
             ("name", 5, "string", False, None), ("kind", 6, "enum", False, None),
             ("start_time_unix_nano", 7, "fixed64", False, None),
             ("end_time_unix_nano", 8, "fixed64", False, None),
             ("attributes", 9, "KeyValue", True, None), ("events", 11, "SpanEvent", True, None),
             ("links", 13, "SpanLink", True, None), ("status", 15, "SpanStatus", False, None)],
    "ScopeSpans": [("scope", 1, "InstrumentationScope", False, None),
                   ("spans", 2, "Span", True, None)],
    "ResourceSpans": [("resource", 1, "Resource", False, None),
                      ("scope_spans", 2, "ScopeSpans", True, None)],
    "ExportTraceServiceRequest": [("resource_spans", 1, "ResourceSpans", True, None)],
    "ExportTracePartialSuccess": [("rejected_spans", 1, "int64", False, None),
                                  ("error_message", 2, "string", False, None)],
    "ExportTraceServiceResponse": [("partial_success", 1, "ExportTracePartialSuccess", False,
                                    None)],
    "Status": [("code", 1, "int32", False, None), ("message", 2, "string", False, None)],
}


def _build():
    fdp = descriptor_pb2.FileDescriptorProto(name="otlp_test_subset.proto", package=PACKAGE,
                                             syntax="proto3")
    for name, fields in MESSAGES.items():
        m = fdp.message_type.add(name=name)
        if any(f[4] is not None for f in fields):
            m.oneof_decl.add(name="value" if name != "Metric" else "data")
        for fname, number, ftype, repeated, oneof in fields:
            f = m.field.add(name=fname, number=number,
                            label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
            if ftype in T:
                f.type = T[ftype]
            else:
                f.type = F.TYPE_MESSAGE
                f.type_name = f".{PACKAGE}.{ftype}"
            if oneof is not None:
                f.oneof_index = oneof
    classes = message_factory.GetMessages([fdp])
    return {name.split(".")[-1]: cls for name, cls in classes.items()}


_CLASSES = _build()
globals().update(_CLASSES)


def any_value(v):
    """An AnyValue as the Python value it holds."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind)


def attributes(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


def add_attribute(attrs, key, value):
    """Appends KeyValue `key` to the repeated field `attrs`, its AnyValue from a Python value."""
    a = attrs.add()
    a.key = key
    if isinstance(value, str):
        a.value.string_value = value
    elif isinstance(value, bool):
        a.value.bool_value = value
    elif isinstance(value, int):
        a.value.int_value = value
    else:
        a.value.double_value = value
