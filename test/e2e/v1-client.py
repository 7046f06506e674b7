"""The real v1 client of Debian's python3-cyborgclient (cyborgclient.v1), as a script would use it:
list the accelerators, then show the first. Prints one JSON document. Usage: v1-client.py <url>"""
import json
import sys

from cyborgclient.v1 import client

COLUMNS = ('uuid', 'name', 'type', 'description', 'device_type', 'capability')

cyborg = client.Client(endpoint_override=sys.argv[1], auth_token='admin')
listed = cyborg.accelerators.list()
shown = cyborg.accelerators.get(listed[0].uuid) if listed else None
print(json.dumps({
    'list': [{k: getattr(a, k, None) for k in COLUMNS} for a in listed],
    'show': None if shown is None else {k: getattr(shown, k, None) for k in COLUMNS + ('hostname', 'lifecycle')},
}))
