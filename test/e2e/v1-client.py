"""The real v1 client of Debian's python3-cyborgclient (cyborgclient.v1), as a script would use it:
list the accelerators, show the first, then show one that does not exist (its error: the client
json.loads error_message, docs/compat-2026-2.md). Prints one JSON document. Usage: v1-client.py <url>"""
import json
import sys

from cyborgclient.v1 import client

COLUMNS = ('uuid', 'name', 'type', 'description', 'device_type', 'capability')

cyborg = client.Client(endpoint_override=sys.argv[1], auth_token='admin')
listed = cyborg.accelerators.list()
shown = cyborg.accelerators.get(listed[0].uuid) if listed else None
try:
    cyborg.accelerators.get('00000000-0000-4000-8000-000000000000')
    missing = None
except Exception as e:  # the client's own exception for a 404, or whatever it tripped on
    missing = {'class': type(e).__name__, 'message': str(e)}
print(json.dumps({
    'list': [{k: getattr(a, k, None) for k in COLUMNS} for a in listed],
    'show': None if shown is None else {k: getattr(shown, k, None) for k in COLUMNS + ('hostname', 'lifecycle')},
    'missing': missing,
}))
