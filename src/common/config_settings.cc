// The settings table: every setting of the cluster file, its kind, range,
// doc and the field it fills (one row each, like redis's config.c), and the
// checks that span several settings. config.cc walks the TOML with it.
#include <algorithm>
#include <string>
#include <string_view>

#include "common/config_internal.h"
#include "common/size.h"

namespace rampart::config_internal {
namespace {

#define RAMPART_FIELD(Target, member) (+[](Target& t) -> auto& { return t.member; })

// The cluster's and the volumes' names.
std::string CheckName(std::string_view name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 64) return "must be at most 64 characters";
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return "may contain only letters, digits, '.', '_' and '-'";
  }
  return "";
}

std::string CheckHost(std::string_view host) {
  if (host.empty()) return "must not be empty";
  for (char c : host) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') return "must not contain whitespace";
  }
  return "";
}

constexpr std::string_view kBackends[] = {"ucx", "tcp"};
constexpr std::string_view kGetModes[] = {"rpc", "ring", "read", "auto"};
constexpr std::string_view kPutModes[] = {"rpc", "ring"};
constexpr std::string_view kProxyIsolation[] = {"ramp", "none"};
constexpr std::string_view kStorageEngines[] = {"auto", "threads", "uring", "inline", "none"};
constexpr std::string_view kLogModes[] = {"none", "dir", "volume"};
constexpr std::string_view kSyncPolicies[] = {"always", "interval"};

// Redis's notify-keyspace-events classes (proxy/notify.h parses them).
std::string CheckKeyspaceEvents(std::string_view value) {
  if (value.find_first_not_of("Ag$lshzxeKEtmdn") == std::string_view::npos) return "";
  return "may contain only the event class characters of Redis's notify-keyspace-events: Ag$lshzxeKEtmdn";
}

std::string CheckNotEmpty(std::string_view value) {
  return value.empty() ? "must not be empty" : "";
}

// Grouped by section, sections in the order `config show` prints them.
const Setting<ClusterConfig> kClusterSettings[] = {
    {.key = "cluster.name",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(ClusterConfig, name),
     .doc = "Names the cluster in logs and benchmark output. Letters, digits, `.`, `_` and `-`, "
            "at most 64.",
     .check = CheckName},
    {.key = "cluster.secret",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(ClusterConfig, secret),
     .doc = "The cluster secret, at least 16 characters: kv-nodes and storage nodes serve only "
            "peers that prove they hold it (challenge-response; it never crosses the network). "
            "Prefer `secret_file`, which keeps it out of the cluster file. Empty: no peer "
            "authentication."},
    {.key = "cluster.secret_file",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(ClusterConfig, secret_file),
     .doc = "A file holding the cluster secret (trailing whitespace ignored; `rampart secret "
            "generate FILE` writes one, mode 0600). Read at start; relative to the working "
            "directory. At most one of `secret` and `secret_file`."},
    {.key = "transport.backend",
     .kind = Kind::kChoice,
     .field = RAMPART_FIELD(ClusterConfig, transport.backend),
     .doc = "The transport under all traffic. `ucx`: UCX (shared memory on one host, TCP across "
            "hosts, RDMA where the hardware has it), with one-sided operations. `tcp`: plain "
            "sockets, two-sided messages only, the baseline.",
     .choices = kBackends},
    {.key = "transport.max_message_size",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(ClusterConfig, transport.max_message_size),
     .doc = "Largest message accepted, two-sided or over a message channel; larger ones are "
            "refused.",
     .min = kKiB,
     .max = kGiB},
    {.key = "transport.spin_us",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, transport.spin_us),
     .doc = "Microseconds every poll loop spins before it blocks on its event fd. 0 blocks at "
            "once; spinning longer cuts latency but takes CPU from neighbours. `auto`: 50 when "
            "the threads that poll on the cluster's busiest host (partitions, proxy workers, "
            "storage nodes) are fewer than the machine's cores, else 0; a proxy's workers awaiting "
            "the kv-nodes' replies spin 50 also when they alone are fewer than the cores.",
     .min = 0,
     .max = 1'000'000,
     .auto_value = TransportConfig::kSpinAuto},
    {.key = "transport.connect_timeout_ms",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, transport.connect_timeout_ms),
     .doc = "Milliseconds connecting to a peer (and opening a message channel) may take.",
     .min = 1,
     .max = 3'600'000},
    {.key = "transport.ring_bytes",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(ClusterConfig, transport.ring_bytes),
     .doc = "The message ring of each connection and direction, in the receiver's registered "
            "memory. Larger messages are split into fragments.",
     .min = 4 * kKiB,
     .max = kGiB,
     .power_of_two = true},
    {.key = "transport.registration_cache_bytes",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(ClusterConfig, transport.registration_cache_bytes),
     .doc = "ucx only: bytes of user buffers the registration cache keeps registered after "
            "their regions are destroyed, so registering them again costs nothing.",
     .min = 0,
     .max = 1024 * kGiB},
    {.key = "transport.ucx.net_devices",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(ClusterConfig, transport.ucx.net_devices),
     .doc = "ucx only: `UCX_NET_DEVICES` unless the environment already sets it. `auto`: `lo` "
            "when every host of the cluster file is a loopback address (UCX would otherwise use "
            "every network device even for 127.0.0.1), else every device (UCX's choice, RDMA "
            "ones included). `all` or empty: UCX's choice; or a list such as `eth0,mlx5_0:1`."},
    {.key = "transport.ucx.tls",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(ClusterConfig, transport.ucx.tls),
     .doc = "ucx only: `UCX_TLS` unless the environment already sets it; empty uses UCX's "
            "default transports."},
    {.key = "kv.partitions_per_node",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, kv.partitions_per_node),
     .doc = "Partitions each node serves, one thread each; partition slot `s` of a node listens "
            "on the node's port + `s`. `auto`: when every host is a loopback address, the "
            "machine's cores / (2 x nodes), 1..8; across machines 2. Fixed once data is "
            "written: a node refuses to start on a data directory holding partitions it would "
            "no longer serve.",
     .min = 1,
     .max = 256,
     .auto_value = KvConfig::kPartitionsAuto},
    {.key = "kv.arena_bytes",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(ClusterConfig, kv.arena_bytes),
     .doc = "First extent of each partition's version store (registered memory, backed only "
            "where slots are written). The store grows by further extents as it fills — each "
            "as large as the store so far, at most 1GiB — up to `kv.maxmemory`.",
     .min = kMiB,
     .max = 1024 * kGiB},
    {.key = "kv.maxmemory",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(ClusterConfig, kv.maxmemory),
     .doc = "Memory the versions of one kv-node (all its partitions) may use; beyond it writes "
            "get Redis's `-OOM command not allowed when used memory > 'maxmemory'.` (deletes "
            "still run). 0: no limit, as in Redis.",
     .min = 0,
     .max = uint64_t{1} << 50},
    {.key = "kv.grace_ms",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, kv.grace_ms),
     .doc = "Milliseconds a superseded version stays readable by timestamp (RAMP repair reads) "
            "before its slot is reclaimed.",
     .min = 0,
     .max = 3'600'000},
    {.key = "kv.prepared_timeout_ms",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, kv.prepared_timeout_ms),
     .doc = "Milliseconds a prepared version waits for its COMMIT before it is reclaimed (its "
            "writer presumably died before committing anywhere).",
     .min = 1,
     .max = 86'400'000},
    {.key = "kv.lock_timeout_ms",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, kv.lock_timeout_ms),
     .doc = "Milliseconds an S2PL transaction may hold or wait for locks without activity before "
            "they are broken (its client presumably died).",
     .min = 1,
     .max = 86'400'000},
    {.key = "kv.max_key_bytes",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(ClusterConfig, kv.max_key_bytes),
     .doc = "Largest key accepted; a request with a longer one gets an error reply.",
     .min = 1,
     .max = 64 * kKiB},
    {.key = "kv.max_value_bytes",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(ClusterConfig, kv.max_value_bytes),
     .doc = "Largest value accepted; a request with a longer one gets an error reply.",
     .min = 0,
     .max = 64 * kMiB},
    {.key = "kv.log",
     .kind = Kind::kChoice,
     .field = RAMPART_FIELD(ClusterConfig, kv.log),
     .doc = "Where each partition keeps its redo log (docs/log_format.md): `none` volatile "
            "(nothing survives a restart; for benchmarks), `dir` files under `kv.data_dir`, "
            "`volume` an erasure-coded volume per node (`[[nodes]]` `log_volume`), which "
            "survives the loss of the node's host and of any one storage node.",
     .choices = kLogModes},
    {.key = "kv.data_dir",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(ClusterConfig, kv.data_dir),
     .doc = "Directory of the `dir` logs: `node-<id>/partition-<p>/` below it. A relative path "
            "is relative to the working directory of the process (`rampart up` passes its own "
            "on); `--data-dir` overrides it.",
     .check = CheckNotEmpty},
    {.key = "kv.sync",
     .kind = Kind::kChoice,
     .field = RAMPART_FIELD(ClusterConfig, kv.sync),
     .doc = "`always`: a write is acknowledged once its log record is synced to the device "
            "(survives a power loss). `interval`: once written to the device (the page cache, "
            "or the storage nodes' memory), which survives the death of the kv-node process; "
            "synced every `kv.sync_interval_ms`, so a crash of the whole machine loses at most "
            "that much (Redis's `appendfsync everysec`).",
     .choices = kSyncPolicies},
    {.key = "kv.sync_interval_ms",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, kv.sync_interval_ms),
     .doc = "Milliseconds between syncs of every partition's log under `kv.sync = \"interval\"`.",
     .min = 1,
     .max = 60'000},
    {.key = "kv.log_segment_bytes",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(ClusterConfig, kv.log_segment_bytes),
     .doc = "Bytes of one log segment (a file, or a slot of the log volume); a segment is at "
            "least `transport.max_message_size` + 1MiB, so that one request's record fits.",
     .min = kMiB,
     .max = 4 * kGiB},
    {.key = "kv.checkpoint_log_bytes",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(ClusterConfig, kv.checkpoint_log_bytes),
     .doc = "A partition checkpoints its state (in the background, a chunk of keys per turn) "
            "once the log written since its last checkpoint passes the larger of this and "
            "that checkpoint's size; the log before a finished checkpoint is removed.",
     .min = kMiB,
     .max = 1024 * kGiB},
    {.key = "kv.checkpoint_age_s",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, kv.checkpoint_age_s),
     .doc = "A partition also checkpoints when its last checkpoint is older than this many "
            "seconds and its log is not empty.",
     .min = 1,
     .max = 86'400},
    {.key = "client.get",
     .kind = Kind::kChoice,
     .field = RAMPART_FIELD(ClusterConfig, client.get),
     .doc = "How a client's first GET round reaches a partition: `rpc` two-sided messages, "
            "`ring` GET+ over the message channel, `read` GET* one-sided reads of the slots "
            "through an address cache (GET+ on a miss), `auto` GET* for the partitions on the "
            "client's host (a one-sided read is a copy there) and `rpc` for the others (rpc "
            "with the tcp transport). `ring` and `read` need the ucx transport.",
     .choices = kGetModes},
    {.key = "client.put",
     .kind = Kind::kChoice,
     .field = RAMPART_FIELD(ClusterConfig, client.put),
     .doc = "How PREPARE/COMMIT reach a partition: `rpc` two-sided messages, `ring` PUT+ over "
            "the message channel (ucx only).",
     .choices = kPutModes},
    {.key = "client.address_cache_entries",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, client.address_cache_entries),
     .doc = "Slot addresses a GET* client caches (key, node, offset, gen, length); when full, "
            "an arbitrary entry makes room.",
     .min = 1,
     .max = uint64_t{1} << 32},
    {.key = "client.unreachable_after_ms",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, client.unreachable_after_ms),
     .doc = "A partition that answers nothing for this long while requests wait for it (a host "
            "cut off, or down) is unreachable: its requests fail at once, or reads go to "
            "another replica, and a connection attempt probes it every 100 ms until it "
            "answers. The longest a request for it holds up others of a proxy worker.",
     .min = 10,
     .max = 3600000},
    {.key = "proxy.enabled",
     .kind = Kind::kBool,
     .field = RAMPART_FIELD(ClusterConfig, proxy.enabled),
     .doc = "Whether `rampart up` starts a Redis-protocol proxy next to the kv-nodes; "
            "`rampart proxy` runs one either way."},
    {.key = "proxy.host",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(ClusterConfig, proxy.host),
     .doc = "Address the proxy listens on for Redis clients.",
     .check = CheckHost},
    {.key = "proxy.port",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, proxy.port),
     .doc = "Port the proxy listens on. It may not be one of a node's partition ports on the "
            "same host.",
     .min = 1,
     .max = 65535},
    {.key = "proxy.workers",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, proxy.workers),
     .doc = "Event-loop threads, each serving its share of the client connections. 0: a quarter "
            "of the cores (at least 1) when every host of the file is a loopback address, one "
            "per core otherwise.",
     .min = 0,
     .max = 64},
    {.key = "proxy.aggregate",
     .kind = Kind::kBool,
     .field = RAMPART_FIELD(ClusterConfig, proxy.aggregate),
     .doc = "Batch the commands of all client connections of a worker into one message per "
            "backend partition per event-loop turn. `false` sends one message per command, for "
            "comparison."},
    {.key = "proxy.batch_max_commands",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, proxy.batch_max_commands),
     .doc = "Most commands one event-loop turn takes before it sends its batches.",
     .min = 1,
     .max = 1'000'000},
    {.key = "proxy.batch_wait_us",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, proxy.batch_wait_us),
     .doc = "Microseconds a turn with fewer than `batch_max_commands` commands waits for more "
            "before it sends. 0 sends at once.",
     .min = 0,
     .max = 1'000'000},
    {.key = "proxy.replicas",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, proxy.replicas),
     .doc = "Copies of every key (R), kept on R distinct nodes; at most the number of nodes.",
     .min = 1,
     .max = 8},
    {.key = "proxy.vnodes",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, proxy.vnodes),
     .doc = "Points per node on the consistent-hash ring that places keys on nodes; more points "
            "spread keys more evenly.",
     .min = 1,
     .max = 4096},
    {.key = "proxy.isolation",
     .kind = Kind::kChoice,
     .field = RAMPART_FIELD(ClusterConfig, proxy.isolation),
     .doc = "`ramp`: the keys of one command are read and written as a read-atomic RAMP "
            "transaction. `none`: plain reads and writes, to show that the read-atomic checker "
            "catches fractured reads.",
     .choices = kProxyIsolation},
    {.key = "proxy.requirepass",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(ClusterConfig, proxy.requirepass),
     .doc = "Password clients must give with AUTH before any other command; empty: no AUTH "
            "needed."},
    {.key = "proxy.notify_keyspace_events",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(ClusterConfig, proxy.notify_keyspace_events),
     .doc = "Keyspace notifications at start, as Redis's `notify-keyspace-events` (e.g. `\"KEA\"`; "
            "docs/proxy.md, \"Keyspace notifications\"); empty: none. `CONFIG SET "
            "notify-keyspace-events` changes it on one proxy until it restarts.",
     .check = CheckKeyspaceEvents},
    {.key = "proxy.max_bulk_bytes",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(ClusterConfig, proxy.max_bulk_bytes),
     .doc = "Largest bulk string of a request, like Redis's `proto-max-bulk-len`; a longer one "
            "is a protocol error.",
     .min = 1,
     .max = 4 * kGiB},
    {.key = "proxy.max_array_elements",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, proxy.max_array_elements),
     .doc = "Most elements of one request array (a command and its arguments); more is a "
            "protocol error.",
     .min = 1,
     .max = 2'147'483'647},
    {.key = "proxy.max_inline_bytes",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(ClusterConfig, proxy.max_inline_bytes),
     .doc = "Longest inline command line (a command sent as plain text, not as a RESP array).",
     .min = kKiB,
     .max = kGiB},
    {.key = "proxy.max_clients",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, proxy.max_clients),
     .doc = "Client connections accepted at once; one more gets `-ERR max number of clients "
            "reached` and is closed.",
     .min = 1,
     .max = 1'000'000},
    {.key = "proxy.timeout_ms",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, proxy.timeout_ms),
     .doc = "Milliseconds one backend transaction may take before its client gets an error "
            "reply.",
     .min = 1,
     .max = 3'600'000},
    {.key = "storage.block_bytes",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(ClusterConfig, storage.block_bytes),
     .doc = "Block size a storage-node serves its device in; under O_DIRECT offsets and lengths "
            "must be multiples of it.",
     .min = 512,
     .max = kMiB,
     .power_of_two = true},
    {.key = "storage.engine",
     .kind = Kind::kChoice,
     .field = RAMPART_FIELD(ClusterConfig, storage.engine),
     .doc = "IO engine of the storage-nodes: `auto` is `inline` for a device in memory (`ram`, "
            "a file on tmpfs or ramfs) and `threads` otherwise; `threads` a static pool of IO "
            "threads fed by the polling thread, `uring` io_uring on the polling thread, `inline` "
            "each IO done by the polling thread itself (a copy from memory costs less than "
            "waking a thread; on a disk it stalls the node's other connections), `none` "
            "transport only (the device is not touched).",
     .choices = kStorageEngines},
    {.key = "storage.io_threads",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, storage.io_threads),
     .doc = "IO threads of the `threads` engine.",
     .min = 1,
     .max = 64},
    {.key = "storage.queue_depth",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ClusterConfig, storage.queue_depth),
     .doc = "Requests a storage-node serves at once per connection; more wait in arrival order.",
     .min = 1,
     .max = 1024},
    {.key = "storage.max_io_bytes",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(ClusterConfig, storage.max_io_bytes),
     .doc = "Largest READ or WRITE; a longer one gets an error reply. At most `staging_bytes`.",
     .min = 512,
     .max = 64 * kMiB},
    {.key = "storage.direct",
     .kind = Kind::kBool,
     .field = RAMPART_FIELD(ClusterConfig, storage.direct),
     .doc = "Open backing files with O_DIRECT where the filesystem allows it (buffered "
            "otherwise; the log says which)."},
    {.key = "storage.staging_bytes",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(ClusterConfig, storage.staging_bytes),
     .doc = "Registered staging memory of each connection to a storage-node, shared by its "
            "requests in flight.",
     .min = 64 * kKiB,
     .max = 16 * kGiB},
};

// The keys of one [[storage_nodes]] entry.
const Setting<StorageNodeConfig> kStorageNodeSettings[] = {
    {.key = "id",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(StorageNodeConfig, id),
     .doc = "Unique id of the storage node (`rampart storage-node --id`).",
     .min = 0,
     .max = 65535,
     .required = true},
    {.key = "host",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(StorageNodeConfig, host),
     .doc = "Host name or address the storage node listens on.",
     .check = CheckHost,
     .required = true},
    {.key = "port",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(StorageNodeConfig, port),
     .doc = "Port the storage node listens on. No two storage nodes share a host and port.",
     .min = 1,
     .max = 65535,
     .required = true},
    {.key = "path",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(StorageNodeConfig, path),
     .doc = "Backing file (created and grown to `size` when needed), or `ram` for memory.",
     .check = CheckNotEmpty,
     .required = true},
    {.key = "size",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(StorageNodeConfig, size),
     .doc = "Bytes served; a multiple of `storage.block_bytes`.",
     .min = 512,
     .max = uint64_t{1} << 50,
     .required = true},
};

// The keys of one [[volumes]] entry.
const Setting<VolumeConfig> kVolumeSettings[] = {
    {.key = "name",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(VolumeConfig, name),
     .doc = "Unique name of the volume. Letters, digits, `.`, `_` and `-`, at most 64.",
     .check = CheckName,
     .required = true},
    {.key = "size",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(VolumeConfig, size),
     .doc = "Bytes of data the volume holds; its area on the nodes is rounded up to whole "
            "stripes.",
     .min = 1,
     .max = uint64_t{1} << 50,
     .required = true},
    {.key = "cell_bytes",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(VolumeConfig, cell_bytes),
     .doc = "Bytes of one cell; a stripe is one cell on each of the volume's nodes. At least "
            "`storage.block_bytes`. Persisted in the layout: do not change it once the volume "
            "holds data.",
     .min = 4 * kKiB,
     .max = kMiB,
     .power_of_two = true},
    {.key = "nodes",
     .kind = Kind::kIdList,
     .field = RAMPART_FIELD(VolumeConfig, nodes),
     .doc = "Ids of the `[[storage_nodes]]` the volume is striped over, at least 3, distinct: a "
            "stripe has one data cell on each but one of them and XOR parity on that one, which "
            "rotates from stripe to stripe. The order is part of the layout: do not change it "
            "once the volume holds data.",
     .min = 0,
     .max = 65535,
     .required = true},
    {.key = "node_offset",
     .kind = Kind::kSize,
     .field = RAMPART_FIELD(VolumeConfig, node_offset),
     .doc = "Where the volume's area starts on each of its nodes; a multiple of `cell_bytes`. "
            "The area is 1MiB of metadata and then one cell per stripe; it must fit in each "
            "node's `size` and overlap no other volume's area there.",
     .min = 0,
     .max = uint64_t{1} << 50},
};

// The keys of one [[proxies]] entry.
const Setting<ProxyAddressConfig> kProxyAddressSettings[] = {
    {.key = "id",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ProxyAddressConfig, id),
     .doc = "Unique id of the proxy (`rampart proxy --id`); its timestamps carry client id "
            "4000 + id, so proxies never issue the same timestamp (nor clash with the ids the "
            "`bench` and `check` commands use by default).",
     .min = 0,
     .max = 999,
     .required = true},
    {.key = "host",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(ProxyAddressConfig, host),
     .doc = "IPv4 address the proxy listens on for Redis clients.",
     .check = CheckHost,
     .required = true},
    {.key = "port",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(ProxyAddressConfig, port),
     .doc = "Port the proxy listens on. No two proxies share a host and port.",
     .min = 1,
     .max = 65535,
     .required = true},
};

// The keys of one [[nodes]] entry.
const Setting<NodeConfig> kNodeSettings[] = {
    {.key = "id",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(NodeConfig, id),
     .doc = "Unique id of the node.",
     .min = 0,
     .max = 65535,
     .required = true},
    {.key = "host",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(NodeConfig, host),
     .doc = "Host name or address the node listens on and its peers connect to.",
     .check = CheckHost,
     .required = true},
    {.key = "port",
     .kind = Kind::kInteger,
     .field = RAMPART_FIELD(NodeConfig, port),
     .doc = "Port the node listens on. No two nodes share a host and port.",
     .min = 1,
     .max = 65535,
     .required = true},
    {.key = "log_volume",
     .kind = Kind::kString,
     .field = RAMPART_FIELD(NodeConfig, log_volume),
     .doc = "With `kv.log = \"volume\"`: the `[[volumes]]` entry that holds this node's redo "
            "logs, one equal area per partition. No two nodes share a volume."},
};

#undef RAMPART_FIELD

}  // namespace

std::span<const Setting<ClusterConfig>> ClusterSettings() { return kClusterSettings; }
std::span<const Setting<NodeConfig>> NodeSettings() { return kNodeSettings; }
std::span<const Setting<StorageNodeConfig>> StorageNodeSettings() { return kStorageNodeSettings; }
std::span<const Setting<VolumeConfig>> VolumeSettings() { return kVolumeSettings; }
std::span<const Setting<ProxyAddressConfig>> ProxyAddressSettings() {
  return kProxyAddressSettings;
}

namespace {

// Every node listens on port .. port + kv.partitions_per_node - 1 (one port
// per partition thread): those ranges must fit in 16 bits and must not
// overlap on one host.
Status CheckPartitionPorts(const ClusterConfig& config) {
  const uint64_t n = config.kv.partitions_per_node;
  for (size_t i = 0; i < config.nodes.size(); ++i) {
    const NodeConfig& a = config.nodes[i];
    if (a.port + n - 1 > 65535) {
      return InvalidArgument("nodes[", i, "] ports ", a.port, "..", a.port + n - 1,
                             " (kv.partitions_per_node = ", n, ") exceed 65535");
    }
    for (size_t j = 0; j < i; ++j) {
      const NodeConfig& b = config.nodes[j];
      if (a.host == b.host && a.port < b.port + n && b.port < a.port + n) {
        return InvalidArgument("nodes[", i, "] ports ", a.port, "..", a.port + n - 1,
                               " overlap nodes[", j, "] ports ", b.port, "..", b.port + n - 1,
                               " on ", a.host, " (each node uses kv.partitions_per_node = ", n,
                               " ports from its port)");
      }
    }
  }
  return Status::Ok();
}

// R copies on R distinct nodes need R nodes; no proxy's listening port may be
// a partition port of a node on the same host (hosts compare as written:
// "localhost" and "127.0.0.1" are different hosts here); one secret at most.
Status CheckProxy(const ClusterConfig& config) {
  const ProxyConfig& proxy = config.proxy;
  if (proxy.replicas > config.nodes.size()) {
    return InvalidArgument("proxy.replicas is ", proxy.replicas, " but the cluster has ",
                           config.nodes.size(), config.nodes.size() == 1 ? " node" : " nodes",
                           " (every key is kept on proxy.replicas distinct nodes)");
  }
  const uint64_t n = config.kv.partitions_per_node;
  for (const ProxyAddressConfig& p : config.ProxyProcesses()) {
    const std::string name =
        config.proxies.empty() ? std::string("proxy.host:proxy.port") : StrCat("proxies[id ", p.id, "]");
    for (size_t i = 0; i < config.nodes.size(); ++i) {
      const NodeConfig& node = config.nodes[i];
      if (node.host == p.host && node.port <= p.port && p.port < node.port + n) {
        return InvalidArgument(name, " ", p.host, ":", p.port, " is one of nodes[", i,
                               "] ports ", node.port, "..", node.port + n - 1, " on ", node.host,
                               " (each node uses kv.partitions_per_node = ", n,
                               " ports from its port)");
      }
    }
  }
  return Status::Ok();
}

Status CheckSecret(const ClusterConfig& config) {
  if (!config.secret.empty() && !config.secret_file.empty()) {
    return InvalidArgument("cluster.secret and cluster.secret_file are both set; give one");
  }
  if (!config.secret.empty() && config.secret.size() < kMinClusterSecretBytes) {
    return InvalidArgument("cluster.secret has ", config.secret.size(), " characters; at least ",
                           kMinClusterSecretBytes, " are needed");
  }
  return Status::Ok();
}

// [storage] limits against each other, and every storage node's size against
// the block size. (Duplicate ids and addresses are found while parsing.)
Status CheckStorage(const ClusterConfig& config) {
  const StorageConfig& st = config.storage;
  if (st.max_io_bytes > st.staging_bytes) {
    return InvalidArgument("storage.max_io_bytes ", FormatSize(st.max_io_bytes),
                           " exceeds storage.staging_bytes ", FormatSize(st.staging_bytes),
                           " (one request must fit in a connection's staging memory)");
  }
  for (size_t i = 0; i < config.storage_nodes.size(); ++i) {
    const StorageNodeConfig& n = config.storage_nodes[i];
    if (n.size % st.block_bytes != 0) {
      return InvalidArgument("storage_nodes[", i, "].size ", n.size,
                             " bytes is not a multiple of storage.block_bytes ",
                             FormatSize(st.block_bytes));
    }
  }
  return Status::Ok();
}

// "volumes[1] (\"logs\")": a volume in error messages.
std::string VolumeName(const ClusterConfig& config, size_t i) {
  return StrCat("volumes[", i, "] (\"", config.volumes[i].name, "\")");
}

// One volume on its own: enough distinct nodes, all of them storage nodes,
// whole blocks per cell, an aligned area that fits in every node.
Status CheckVolume(const ClusterConfig& config, size_t i) {
  const VolumeConfig& v = config.volumes[i];
  const std::string name = VolumeName(config, i);
  if (v.nodes.size() < 3) {
    return InvalidArgument(name, ".nodes lists ", v.nodes.size(),
                           " storage nodes; a volume needs at least 3 (k >= 2 data cells and "
                           "one parity cell per stripe)");
  }
  for (size_t a = 0; a < v.nodes.size(); ++a) {
    for (size_t b = 0; b < a; ++b) {
      if (v.nodes[a] == v.nodes[b]) {
        return InvalidArgument(name, ".nodes lists storage node ", v.nodes[a], " twice (",
                               name, ".nodes[", b, "] and [", a, "])");
      }
    }
    if (config.FindStorageNode(v.nodes[a]) == nullptr) {
      return InvalidArgument(name, ".nodes[", a, "] is ", v.nodes[a],
                             ", which is not the id of any [[storage_nodes]] entry");
    }
  }
  if (v.cell_bytes < config.storage.block_bytes) {
    return InvalidArgument(name, ".cell_bytes ", FormatSize(v.cell_bytes),
                           " is smaller than storage.block_bytes ",
                           FormatSize(config.storage.block_bytes),
                           " (a cell must be whole blocks)");
  }
  if (v.node_offset % v.cell_bytes != 0) {
    return InvalidArgument(name, ".node_offset ", FormatSize(v.node_offset),
                           " is not a multiple of cell_bytes ", FormatSize(v.cell_bytes));
  }
  const uint64_t end = v.node_offset + v.area_bytes();
  for (uint32_t id : v.nodes) {
    const StorageNodeConfig& node = *config.FindStorageNode(id);
    if (end > node.size) {
      return InvalidArgument(name, " needs bytes [", v.node_offset, ", ", end,
                             ") of each of its nodes (node_offset, then ",
                             FormatSize(kVolumeMetadataBytes), " of metadata and ", v.stripes(),
                             " stripes of ", FormatSize(v.cell_bytes), ") but storage node ", id,
                             " has only ", FormatSize(node.size));
    }
  }
  return Status::Ok();
}

// Every volume on its own, and no two volumes' areas overlapping on a node
// they share. Names are unique already (checked while parsing).
Status CheckVolumes(const ClusterConfig& config) {
  for (size_t i = 0; i < config.volumes.size(); ++i) {
    RAMPART_RETURN_IF_ERROR(CheckVolume(config, i));
    const VolumeConfig& a = config.volumes[i];
    const uint64_t a_end = a.node_offset + a.area_bytes();
    for (size_t j = 0; j < i; ++j) {
      const VolumeConfig& b = config.volumes[j];
      const uint64_t b_end = b.node_offset + b.area_bytes();
      if (a.node_offset >= b_end || b.node_offset >= a_end) continue;
      for (uint32_t id : a.nodes) {
        if (std::find(b.nodes.begin(), b.nodes.end(), id) == b.nodes.end()) continue;
        return InvalidArgument(VolumeName(config, i), " bytes [", a.node_offset, ", ", a_end,
                               ") overlap ", VolumeName(config, j), " bytes [", b.node_offset,
                               ", ", b_end, ") on storage node ", id,
                               " (give one of them another node_offset)");
      }
    }
  }
  return Status::Ok();
}

// kv.log = "volume": every node names an existing volume of its own.
Status CheckLogVolumes(const ClusterConfig& config) {
  if (config.kv.log != "volume") return Status::Ok();
  for (size_t i = 0; i < config.nodes.size(); ++i) {
    const NodeConfig& n = config.nodes[i];
    if (n.log_volume.empty()) {
      return InvalidArgument("kv.log is \"volume\" but nodes[", i, "] (id ", n.id,
                             ") has no log_volume naming the [[volumes]] entry for its logs");
    }
    if (config.FindVolume(n.log_volume) == nullptr) {
      return InvalidArgument("nodes[", i, "].log_volume \"", n.log_volume,
                             "\" is not the name of any [[volumes]] entry");
    }
    for (size_t j = 0; j < i; ++j) {
      if (config.nodes[j].log_volume == n.log_volume) {
        return InvalidArgument("nodes[", i, "] and nodes[", j, "] both log to volume \"",
                               n.log_volume, "\" (a volume holds the logs of one node)");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckClusterConfig(const ClusterConfig& config) {
  if (config.nodes.empty()) {
    return InvalidArgument("nodes: at least one [[nodes]] entry is required");
  }
  RAMPART_RETURN_IF_ERROR(CheckPartitionPorts(config));
  RAMPART_RETURN_IF_ERROR(CheckProxy(config));
  RAMPART_RETURN_IF_ERROR(CheckSecret(config));
  RAMPART_RETURN_IF_ERROR(CheckStorage(config));
  RAMPART_RETURN_IF_ERROR(CheckVolumes(config));
  return CheckLogVolumes(config);
}

}  // namespace rampart::config_internal
