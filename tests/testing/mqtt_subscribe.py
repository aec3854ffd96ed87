"""A subscriber over paho-mqtt (MQTT 5) that collects what it receives."""
import threading
import time

import paho.mqtt.client as mqtt
from paho.mqtt.subscribeoptions import SubscribeOptions


class Subscriber:
    """Subscribes to `topic` at `qos` with a clean session; `messages` holds
    (topic, payload bytes, properties) in arrival order."""

    def __init__(self, port, topic="#", qos=1):
        self.messages = []
        self._lock = threading.Lock()
        self._subscribed = threading.Event()
        self.client = mqtt.Client(client_id="", protocol=mqtt.MQTTv5)
        self.client.on_message = self._on_message
        self.client.on_subscribe = lambda *a, **k: self._subscribed.set()
        self.client.on_connect = lambda c, *a, **k: c.subscribe(
            topic, options=SubscribeOptions(qos=qos))
        self.client.connect("127.0.0.1", port, clean_start=True)
        self.client.loop_start()
        if not self._subscribed.wait(10):
            raise RuntimeError("subscriber could not subscribe")

    def _on_message(self, client, userdata, msg):
        with self._lock:
            self.messages.append((msg.topic, msg.payload, msg.properties))

    def received(self):
        with self._lock:
            return list(self.messages)

    def wait_for(self, count, timeout=30.0):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if len(self.received()) >= count:
                return True
            time.sleep(0.05)
        return False

    def stop(self):
        self.client.loop_stop()
        self.client.disconnect()
