"""Publishing helpers over paho-mqtt (Debian's python3-paho-mqtt 1.6)."""
import threading
import time

import paho.mqtt.client as mqtt


def connect(port, client_id="", protocol=mqtt.MQTTv311, inflight=1000):
    c = mqtt.Client(client_id=client_id, protocol=protocol, clean_session=True
                    if protocol != mqtt.MQTTv5 else None)
    c.max_inflight_messages_set(inflight)
    c.max_queued_messages_set(0)
    connected = threading.Event()
    c.on_connect = lambda *a, **k: connected.set()
    c.connect("127.0.0.1", port)
    c.loop_start()
    if not connected.wait(10):
        raise RuntimeError("publisher could not connect")
    return c


def publish_all(port, messages, qos=1, timeout=60.0, pace=None):
    """Publishes (topic, payload) pairs; waits until the broker acknowledged every one.

    `pace` is an optional callback called with the index after each publish (for tests that
    act while messages flow)."""
    # mosquitto accepts at most max_inflight_messages (20) unfinished QoS 2 flows per client.
    c = connect(port, inflight=20 if qos == 2 else 1000)
    infos = []
    try:
        for i, (topic, payload) in enumerate(messages):
            infos.append(c.publish(topic, payload, qos=qos))
            if pace:
                pace(i)
        deadline = time.time() + timeout
        for info in infos:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("broker did not acknowledge all publishes")
            info.wait_for_publish(timeout=left)
            if not info.is_published():
                raise TimeoutError("broker did not acknowledge all publishes")
    finally:
        c.loop_stop()
        c.disconnect()


def publish_v5(port, topic, payload, user_properties=(), **properties):
    """Publishes one QoS 1 message over MQTT 5 with `user_properties` ((name, value) pairs) and
    other PUBLISH properties by paho's names (ContentType="...", ResponseTopic="...");
    returns once the broker acknowledged it."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties
    c = mqtt.Client(client_id="", protocol=mqtt.MQTTv5)
    c.connect("127.0.0.1", port)
    c.loop_start()
    try:
        props = Properties(PacketTypes.PUBLISH)
        if user_properties:
            props.UserProperty = list(user_properties)
        for name, value in properties.items():
            setattr(props, name, value)
        c.publish(topic, payload, qos=1, properties=props).wait_for_publish(10)
    finally:
        c.loop_stop()
        c.disconnect()
