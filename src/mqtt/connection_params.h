// The configuration keys of an MQTT connection, shared by the MQTT source and the MQTT sink:
// `uri`, `protocol`, `client_id`, `username`, `password`, `persistent_session`,
// `session_expiry`, `keep_alive`, `connect_timeout`, `reconnect_min`, `reconnect_max`,
// `max_packet_size` and the `tls` section — declared once, read into ClientOptions once.
#pragma once

#include <string>
#include <vector>

#include "mqtt/client.h"
#include "seedance/param_spec.h"
#include "seedance/result.h"

namespace seedance::mqtt {

// `client_id_doc` says what the default client id is for this plugin.
std::vector<ParamSpec> ConnectionParamSpecs(const std::string& client_id_doc);

// Reads the keys above. `default_client_id` is used when `client_id` is not set; `qos` decides
// the default of `persistent_session` (true with QoS 1 or 2: a clean session would drop what
// the broker holds for us across a restart). Checks the TLS files.
Result<ClientOptions> ReadConnectionParams(const Params& p, std::string default_client_id, int qos);

}  // namespace seedance::mqtt
