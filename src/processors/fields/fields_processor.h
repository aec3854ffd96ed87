// The `fields` processor: the small field operations users expect without writing a script
// (Fluent Bit's `modify`, Telegraf's `rename`, Vector's simplest `remap`s), on JSON payloads,
// with dotted paths ("meta.device"), in this order:
//   rename  {from: to, ...}   moves a field (a missing one is no change);
//   remove  [path, ...]       deletes fields;
//   keep    [path, ...]       keeps only these fields (and the objects holding them);
//   set     {path: value}     sets fields: a value that is JSON (1.5, true, null, "42",
//                             {"a":1}) is taken as that JSON, anything else as a string.
// A payload that is not a JSON object, or a path through a field that is not an object
// (set "a.b" where "a" is 3), sends the event to `error` with the reason. Events it does not
// change are handed on untouched; changed ones are written back with RapidJSON (integers of up
// to 64 bits and shortest round-trip doubles keep their value). Parameters can change on SIGHUP.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::processors {

ProcessorFactory FieldsProcessorFactory();

}  // namespace seedance::processors
