"""Drives real Nova's Cyborg client (Debian python3-nova, nova.accelerator.cyborg) against a Cyborg
endpoint, as nova-conductor and nova-compute would during a boot, and prints one JSON object per
step on stdout. Run with /usr/bin/python3 (Debian's interpreter, where nova is installed).

usage: nova-client.py CYBORG_URL COMMAND [ARGS...]
  groups DP_NAME                       get_device_profile_request_groups
  create DP_NAME                       create_arqs
  bind JSON_BINDINGS                   bind_arqs({arq_uuid: {hostname, device_rp_uuid, instance_uuid}})
  get INSTANCE [resolved]              get_arqs_for_instance
  get-one ARQ_UUID                     get_arq_by_uuid
  delete-instance INSTANCE             delete_arqs_for_instance
  delete-uuids ARQ_UUID[,ARQ_UUID...]  delete_arqs_by_uuid
  mdev ARQ_UUID                        get_arq_by_uuid, then what the libvirt driver makes of an
                                       MDEV ARQ with Nova's own helpers (docs/nova.md)

CYBORG_URL is what nova.conf [cyborg] endpoint_override would hold, e.g. http://127.0.0.1:6666/v2.
Nova's own exceptions are printed as {"error": <class name>, "message": ...} with exit code 3.
"""
import json
import sys


def configure(endpoint):
    # Nova reads its options through oslo.config: register them, then point [cyborg] at us.
    import nova.conf
    conf = nova.conf.CONF
    conf([], project='nova', default_config_files=[])
    conf.set_override('endpoint_override', endpoint, group='cyborg')
    conf.set_override('timeout', 30, group='cyborg')


def client():
    from nova import context as nova_context
    from nova import objects
    from nova.accelerator import cyborg
    objects.register_all()  # as every Nova service does at start: RequestGroup and friends
    # A request context carrying a token: Nova forwards it as X-Auth-Token (noauth accepts it).
    ctx = nova_context.RequestContext(user_id='nova', project_id='service', auth_token='admin')
    return ctx, cyborg


def mdev_view(arq):
    """An MDEV ARQ as Nova's libvirt driver uses it (nova-specs 2026.2 cyborg-vgpu-support):
    the parent's PCI address (nova.pci.utils, which refuses unpadded fields), its libvirt node
    device name (host.py: ':' and '.' become '_') and the <hostdev>
    that _guest_add_mdevs writes (nova.virt.libvirt.config)."""
    from nova.pci import utils as pci_utils
    from nova.virt.libvirt import config as vconfig
    info = arq['attach_handle_info']
    address = pci_utils.get_pci_address(
        info['domain'], info['bus'], info['device'], info['function'])
    pci_utils.parse_address(address)  # raises PciDeviceWrongAddressFormat
    parent = 'pci_' + address.replace('.', '_').replace(':', '_')
    hostdev = vconfig.LibvirtConfigGuestHostdevMDEV()
    hostdev.uuid = arq['attach_handle_uuid']
    return {'type': arq['attach_handle_type'], 'mdev_type': info['asked_type'],
            'uuid': arq['attach_handle_uuid'], 'parent_address': address,
            'parent_name': parent, 'hostdev': hostdev.to_xml()}


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    endpoint, command, args = argv[1], argv[2], argv[3:]
    configure(endpoint)
    ctx, cyborg = client()
    from nova import exception
    cy = cyborg.get_client(ctx)
    try:
        if command == 'groups':
            groups = cyborg.get_device_profile_request_groups(ctx, args[0])
            out = [{'requester_id': g.requester_id, 'resources': g.resources,
                    'required_traits': sorted(g.required_traits),
                    'forbidden_traits': sorted(g.forbidden_traits)} for g in groups]
        elif command == 'create':
            out = cy.create_arqs(args[0])
        elif command == 'bind':
            cy.bind_arqs(json.loads(args[0]))
            out = {'bound': True}
        elif command == 'get':
            out = cy.get_arqs_for_instance(args[0], only_resolved=len(args) > 1 and args[1] == 'resolved')
        elif command == 'get-one':
            out = cy.get_arq_by_uuid(args[0])
        elif command == 'mdev':
            out = mdev_view(cy.get_arq_by_uuid(args[0]))
        elif command == 'delete-instance':
            cy.delete_arqs_for_instance(args[0])
            out = {'deleted': True}
        elif command == 'delete-uuids':
            cy.delete_arqs_by_uuid(args[0].split(','))
            out = {'deleted': True}
        else:
            print('unknown command %s' % command, file=sys.stderr)
            return 2
    except exception.NovaException as exc:
        print(json.dumps({'error': type(exc).__name__, 'message': str(exc)}))
        return 3
    print(json.dumps(out))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
