"""A real oslo.messaging notification listener, as Ceilometer or Watcher runs one (Debian's
python3-oslo.messaging). Listens on <exchange>/<topic> at every priority, prints
{"ready": true} once its queues are declared and bound, then one JSON line per notification
(priority, ctxt, publisher_id, event_type, payload, metadata), and exits 0 after <count> of them,
or 3 when <timeout> seconds pass first.

Usage: oslo-listener.py <transport_url> <exchange> <topic> <count> <timeout>"""
import json
import logging
import sys
import threading

from oslo_config import cfg
import oslo_messaging
from oslo_messaging.notify.dispatcher import PRIORITIES

url, exchange, topic, count, timeout = sys.argv[1:6]
count = int(count)
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

received = []
lock = threading.Lock()
enough = threading.Event()


def handler(priority):
    def handle(self, ctxt, publisher_id, event_type, payload, metadata):
        line = json.dumps({
            'priority': priority,
            'ctxt': ctxt,
            'publisher_id': publisher_id,
            'event_type': event_type,
            'payload': payload,
            'metadata': metadata,
        })
        with lock:
            received.append(line)
            print(line, flush=True)
            if len(received) >= count:
                enough.set()
        return oslo_messaging.NotificationResult.HANDLED
    return handle


# One method per priority, as the dispatcher looks them up by name.
Endpoint = type('Endpoint', (), {p: handler(p) for p in PRIORITIES})

conf = cfg.ConfigOpts()
conf([], project='cyborg-oslo-listener', default_config_files=[])
transport = oslo_messaging.get_notification_transport(conf, url=url)
listener = oslo_messaging.get_notification_listener(
    transport,
    [oslo_messaging.Target(topic=topic, exchange=exchange)],
    [Endpoint()],
    executor='threading',
)
listener.start()
print(json.dumps({'ready': True}), flush=True)
done = enough.wait(float(timeout))
listener.stop()
listener.wait()
transport.cleanup()
sys.exit(0 if done else 3)
