// Cluster configuration: one TOML file that every process of a cluster reads.
//
//   auto config = LoadClusterConfig(path);   // "" → the embedded default
//   if (!config.ok()) return config.status(); // "x.toml:12:3: transport.backend must be ..."
//   for (const NodeConfig& node : config->nodes) ...
//
// The embedded default is config/default.toml, compiled into the binary. A
// file overrides it key by key: every key it leaves out keeps its default,
// except that a [[nodes]] list, when present, replaces the default nodes as a
// whole. Every setting is described in docs/configuration.md, whose reference
// table is the output of ClusterSettingsMarkdown() (`rampart config docs`).
//
// Adding a setting: a field below (with its default), a row in the settings
// table in config_settings.cc, the key in config/default.toml, and the
// regenerated table in docs/configuration.md; config_test checks that the four
// agree.
//
// This header is below src/transport: it knows nothing of transport types; the
// transport maps TransportConfig onto its own options.
//
// Thread-safety: plain values; the functions may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/size.h"
#include "common/status.h"

namespace rampart {

// [transport.ucx]: passed to UCX through its environment variables.
struct UcxConfig {
  // UCX_NET_DEVICES unless the environment already sets it. "auto": "lo"
  // when every host of the cluster file is a loopback address, else UCX's
  // choice (EffectiveNetDevices). "all" or empty: UCX's choice. Default: "auto".
  std::string net_devices = "auto";
  // UCX_TLS unless the environment already sets it. Empty: UCX's default.
  // Default: "".
  std::string tls;

  bool operator==(const UcxConfig&) const = default;
};

// [transport]
struct TransportConfig {
  // "ucx" or "tcp" (validated; transport::ParseBackend maps it). Default: "ucx".
  std::string backend = "ucx";
  // Largest two-sided or channel message accepted, 1KiB..1GiB. Default: 64MiB.
  uint64_t max_message_size = 64 * kMiB;
  // Microseconds every poll loop spins before it blocks, 0..1000000. 0 blocks
  // at once. kSpinAuto ("auto", the default): EffectiveSpinMicros decides.
  static constexpr uint32_t kSpinAuto = 0xFFFF'FFFF;
  uint32_t spin_us = kSpinAuto;
  // Milliseconds a connection to a peer may take, 1..3600000. Default: 5000.
  uint32_t connect_timeout_ms = 5000;
  // Message ring per connection and direction; a power of two, 4KiB..1GiB.
  // Default: 1MiB.
  uint64_t ring_bytes = kMiB;
  // Bytes of user buffers the registration cache keeps registered after their
  // regions are destroyed (ucx), 0..1TiB. Default: 256MiB.
  uint64_t registration_cache_bytes = 256 * kMiB;
  UcxConfig ucx;

  bool operator==(const TransportConfig&) const = default;
};

// [kv]: the kv-node's partitions (src/kv).
struct KvConfig {
  // Partitions (threads, ports node.port + 0..n-1) per node, 1..256.
  // kPartitionsAuto ("auto", the default) is resolved when the file is
  // loaded (AutoPartitionsPerNode); a loaded ClusterConfig holds a number.
  static constexpr uint32_t kPartitionsAuto = 0xFFFF'FFFF;
  uint32_t partitions_per_node = kPartitionsAuto;
  // First extent of each partition's version store, 1MiB..1TiB; the store
  // grows by more extents (kv/arena.h). Default: 64MiB.
  uint64_t arena_bytes = 64 * kMiB;
  // Bytes one node's versions may use (all partitions), 0 = no limit.
  // Default: 0.
  uint64_t maxmemory = 0;
  // Milliseconds a superseded version stays readable by ts, 0..3600000: long
  // enough for any read's repair round, short enough that a write-heavy load
  // does not fill the arena with old versions. Default: 1000.
  uint32_t grace_ms = 1000;
  // Milliseconds a prepared version waits for its COMMIT before it is
  // reclaimed, 1..86400000. Default: 30000.
  uint32_t prepared_timeout_ms = 30000;
  // Milliseconds a transaction may hold or wait for S2PL locks before they are
  // broken, 1..86400000. Default: 10000.
  uint32_t lock_timeout_ms = 10000;
  // Largest key, 1B..64KiB. Default: 64KiB (Redis has no practical bound:
  // URLs as cache keys pass 1 KiB).
  uint64_t max_key_bytes = 64 * kKiB;
  // Largest value, 0B..64MiB. Default: 1MiB.
  uint64_t max_value_bytes = kMiB;
  // Where partitions keep their redo logs: "none" (volatile), "dir" (files
  // under data_dir) or "volume" (each node's [[nodes]] log_volume). Default: "dir".
  std::string log = "dir";
  // The data directory of kv.log = "dir": node-<id>/partition-<p>/ below it;
  // relative paths are relative to the working directory. Default: "./rampart-data".
  std::string data_dir = "./rampart-data";
  // "always" (acknowledge after the log is synced) or "interval" (acknowledge
  // once written; sync every sync_interval_ms). Default: "interval".
  std::string sync = "interval";
  // Milliseconds between syncs under sync = "interval", 1..60000. Default: 1000.
  uint32_t sync_interval_ms = 1000;
  // Bytes of one log segment (file or volume slot), 1MiB..4GiB; at least the
  // largest message plus 1MiB is used. Default: 64MiB.
  uint64_t log_segment_bytes = 64 * kMiB;
  // A checkpoint starts when the log since the last one passes
  // max(this, that checkpoint's size), 1MiB..1TiB. Default: 64MiB.
  uint64_t checkpoint_log_bytes = 64 * kMiB;
  // ... or when it is older than this many seconds, 1..86400. Default: 600.
  uint32_t checkpoint_age_s = 600;

  bool operator==(const KvConfig&) const = default;
};

// [client]: how clients (src/txn) reach the kv-nodes. Command-line flags of
// the client commands override these.
struct ClientConfig {
  // The first GET round: "rpc" (two-sided messages), "ring" (GET+: over the
  // message channel) or "read" (GET*: one-sided reads through an address
  // cache, GET+ on a miss). ring and read need transport.backend = "ucx".
  // Default: "rpc".
  std::string get = "auto";
  // PREPARE/COMMIT: "rpc" or "ring" (PUT+; needs ucx). Default: "rpc".
  std::string put = "rpc";
  // Addresses a GET* client caches, 1..2^32. Default: 1048576.
  uint64_t address_cache_entries = 1 << 20;
  // Milliseconds without an answer after which a partition that requests
  // wait for counts as unreachable (txn/client.h), 10..3600000. Default: 1000.
  uint32_t unreachable_after_ms = 1000;

  bool operator==(const ClientConfig&) const = default;
};

// [proxy]: the Redis-protocol proxy (src/proxy): `rampart proxy`, and started by `rampart up`.
struct ProxyConfig {
  bool enabled = true;                 // `rampart up` starts a proxy
  std::string host = "127.0.0.1";      // listen address (check like nodes' host)
  uint16_t port = 6380;                // 1..65535
  uint32_t workers = 0;                // 0..64; 0 = EffectiveProxyWorkers
  bool aggregate = true;               // batch the requests of all client connections of a worker per backend partition per event-loop turn (seed 003); false = one message per command, for comparison
  uint32_t batch_max_commands = 1024;  // 1..1000000: commands one turn takes at most
  uint32_t batch_wait_us = 0;          // 0..1000000: how long a turn waits for more commands when it has fewer than batch_max_commands (0 = send at once)
  uint32_t replicas = 1;               // 1..8: R, copies of every key on R distinct nodes
  uint32_t vnodes = 160;               // 1..4096: points per node on the consistent-hash ring
  std::string isolation = "ramp";      // choice: ramp | none  (none: for showing the read-atomic checker catches fractured reads)
  std::string requirepass;             // AUTH password; empty = no AUTH needed
  std::string notify_keyspace_events;  // Redis's notify-keyspace-events classes at start; empty = none
  uint64_t max_bulk_bytes = 512 * kMiB; // size 1B..4GiB: largest bulk string of a request (like proto-max-bulk-len)
  uint32_t max_array_elements = 1048576; // 1..2147483647: elements of one request array
  uint64_t max_inline_bytes = 64 * kKiB; // size 1KiB..1GiB: longest inline command line
  uint32_t max_clients = 10000;        // 1..1000000: connections accepted at once, then "-ERR max number of clients reached"
  uint32_t timeout_ms = 5000;           // 1..3600000: how long one backend transaction may take before the client gets an error

  bool operator==(const ProxyConfig&) const = default;
};

// [storage]: the storage-nodes (src/storage): `rampart storage-node`.
struct StorageConfig {
  // Block size the devices are served in; a power of two, 512B..1MiB.
  // Default: 4KiB.
  uint64_t block_bytes = 4 * kKiB;
  // IO engine: "auto" (inline on memory-backed devices, threads otherwise),
  // "threads" (static pool of IO threads), "uring" (io_uring), "inline" (the
  // IO on the polling thread) or "none" (transport only, the device is not
  // touched). Default: "auto".
  std::string engine = "auto";
  // IO threads of the threads engine, 1..64. Default: 4.
  uint32_t io_threads = 4;
  // Requests served at once per connection, 1..1024. Default: 64.
  uint32_t queue_depth = 64;
  // Largest READ/WRITE, 512B..64MiB; at most staging_bytes. Default: 1MiB.
  uint64_t max_io_bytes = kMiB;
  // Open backing files with O_DIRECT where the filesystem allows it.
  // Default: true.
  bool direct = true;
  // Registered staging memory per connection, 64KiB..16GiB. Default: 16MiB.
  uint64_t staging_bytes = 16 * kMiB;

  bool operator==(const StorageConfig&) const = default;
};

// One [[storage_nodes]] entry. All keys are required.
struct StorageNodeConfig {
  uint32_t id = 0;     // unique among storage nodes, 0..65535
  std::string host;    // listen address
  uint16_t port = 0;   // 1..65535; host:port unique among storage nodes
  std::string path;    // backing file, or "ram"
  uint64_t size = 0;   // bytes served; a multiple of storage.block_bytes

  std::string address() const;

  bool operator==(const StorageNodeConfig&) const = default;
};

// Bytes at the start of a volume's area on each of its nodes reserved for the
// volume's metadata (the write-intent log); the stripes' cells follow. A
// multiple of every allowed cell_bytes. Persisted (docs/volume_format.md): do
// not change.
inline constexpr uint64_t kVolumeMetadataBytes = kMiB;

// One [[volumes]] entry: an erasure-coded volume striped over storage nodes
// (src/storage/volume_layout.h, docs/volume_format.md). Each stripe has k =
// nodes.size() - 1 data cells and one XOR parity cell, one cell per node.
// name, size and nodes are required. Validated against [[storage_nodes]]:
// every node exists, and the volume's area [node_offset, node_offset +
// area_bytes()) fits in the node and overlaps no other volume's area on it.
struct VolumeConfig {
  std::string name;               // unique among volumes; letters, digits, '.', '_', '-'
  uint64_t size = 0;              // bytes of data, 1B..1024TiB
  uint64_t cell_bytes = 16 * kKiB;  // power of two, 4KiB..1MiB, >= storage.block_bytes
  std::vector<uint32_t> nodes;    // storage node ids, at least 3, distinct
  uint64_t node_offset = 0;       // where the area starts on each node; a multiple of cell_bytes

  // k: data cells per stripe. 0 when fewer than two nodes are listed.
  uint64_t data_cells() const { return nodes.empty() ? 0 : nodes.size() - 1; }
  // size rounded up to whole stripes of data_cells() cells. REQUIRES: data_cells() > 0.
  uint64_t stripes() const;
  // Bytes the volume uses on each of its nodes from node_offset: the metadata
  // area, then one cell per stripe. REQUIRES: data_cells() > 0.
  uint64_t area_bytes() const { return kVolumeMetadataBytes + stripes() * cell_bytes; }

  bool operator==(const VolumeConfig&) const = default;
};

// One [[proxies]] entry: a Redis-protocol proxy process (`rampart proxy
// --id N`). All keys are required.
struct ProxyAddressConfig {
  uint32_t id = 0;     // unique among proxies, 0..999; its timestamps' client id is 4000 + id
  std::string host;    // IPv4 address to listen on for Redis clients
  uint16_t port = 0;   // 1..65535; host:port unique among proxies

  std::string address() const;

  bool operator==(const ProxyAddressConfig&) const = default;
};

// The timestamp client id of proxy `id` (proxy.md): distinct proxies never
// issue the same timestamp.
inline constexpr uint32_t kProxyClientIdBase = 4000;

// One [[nodes]] entry: a process of the cluster. All keys are required.
struct NodeConfig {
  uint32_t id = 0;     // unique, 0..65535
  std::string host;    // name or address to listen on and connect to
  uint16_t port = 0;   // 1..65535; host:port is unique
  // kv.log = "volume": the [[volumes]] entry holding this node's redo logs;
  // no two nodes share one. Optional otherwise.
  std::string log_volume;

  // "127.0.0.1:7000"
  std::string address() const;

  bool operator==(const NodeConfig&) const = default;
};

struct ClusterConfig {
  // [cluster] name: names the cluster in logs and benchmark output;
  // letters, digits, '.', '_' and '-', at most 64. Default: "local".
  std::string name = "local";
  // [cluster] secret / secret_file: the secret every peer below the proxy
  // proves it holds before a kv-node or storage node serves it anything
  // (docs/transport.md, "Peer authentication"). At most one of the two; both
  // empty: no authentication. ReadClusterSecret gives the effective secret.
  std::string secret;
  std::string secret_file;
  TransportConfig transport;
  KvConfig kv;
  ClientConfig client;
  // proxy.replicas may not exceed the number of nodes, and proxy.host:port may
  // not be a partition port of a node on the same host.
  ProxyConfig proxy;
  StorageConfig storage;
  // [[nodes]]: at least one. Each node uses kv.partitions_per_node ports from
  // its port; those ranges may not overlap on one host. Default: 4 nodes on
  // 127.0.0.1:7000, 7010, 7020, 7030 (from config/default.toml; a
  // default-constructed ClusterConfig has none).
  std::vector<NodeConfig> nodes;
  // [[storage_nodes]]: may be empty (the default: none). Unlike [[nodes]], a
  // file's list replaces the default list.
  std::vector<StorageNodeConfig> storage_nodes;
  // [[volumes]]: may be empty (the default: none); a file's list replaces the
  // default list.
  std::vector<VolumeConfig> volumes;
  // [[proxies]]: the proxy processes when the cluster has several (on several
  // hosts). Empty (the default): one proxy on proxy.host:proxy.port.
  std::vector<ProxyAddressConfig> proxies;

  // Where the configuration came from: the file path, or "<default>".
  // Not a setting; ignored by operator==.
  std::string origin;

  // The node with this id, or nullptr.
  const NodeConfig* FindNode(uint32_t id) const;
  // The storage node with this id, or nullptr.
  const StorageNodeConfig* FindStorageNode(uint32_t id) const;
  // The volume with this name, or nullptr.
  const VolumeConfig* FindVolume(std::string_view name) const;
  // The proxy processes of the cluster: [[proxies]] when the file lists any,
  // else one with id 0 on proxy.host:proxy.port; none when proxy.enabled is
  // false.
  std::vector<ProxyAddressConfig> ProxyProcesses() const;
  // Every host the file names (nodes, storage nodes, proxies), once each.
  std::vector<std::string> Hosts() const;

  bool operator==(const ClusterConfig& other) const {
    return name == other.name && transport == other.transport && kv == other.kv &&
           client == other.client && proxy == other.proxy && nodes == other.nodes &&
           storage == other.storage && storage_nodes == other.storage_nodes &&
           volumes == other.volumes && proxies == other.proxies && secret == other.secret &&
           secret_file == other.secret_file;
  }
};

// Reads the TOML file at `path` over the embedded default; an empty path
// returns the embedded default itself. Errors are one line that names the
// file, the position, the key and the problem:
//   IoError          "cluster.toml: cannot read: No such file or directory"
//   InvalidArgument  "cluster.toml:3:1: unknown key transport.backnd (did you
//                     mean transport.backend?)"
Result<ClusterConfig> LoadClusterConfig(const std::string& path);

// Parses TOML text over the embedded default. `origin` names the text in
// error messages and becomes ClusterConfig::origin.
Result<ClusterConfig> ParseClusterConfig(std::string_view toml_text, std::string_view origin);

// The poll loops' spin of transport.spin_us = "auto": kAutoSpinMicros when
// the threads that poll on the cluster file's busiest host — its kv-nodes'
// partitions, the proxy's workers (EffectiveProxyWorkers), one per storage
// node — leave a core of `cores` free (fewer pollers than cores), else 0: a
// thread spinning on a core another process's woken thread needs costs that
// thread its latency (docs/configuration.md, "How the defaults are chosen").
// A number of spin_us is returned as it is.
inline constexpr uint32_t kAutoSpinMicros = 50;
// kv.partitions_per_node = "auto": when every host of the file is a loopback
// address (the whole cluster and its clients on this machine, so every
// process computes the same number) cores / (2 x nodes), at least 1 and at
// most kMaxAutoPartitions — half the cores for partition threads, the rest for
// the proxy's workers and the clients; for a cluster over several machines
// kAcrossHostsPartitions, the same on every machine whatever its cores (the
// partition count is the hash ring's: all processes must agree on it).
inline constexpr uint32_t kMaxAutoPartitions = 8;
inline constexpr uint32_t kAcrossHostsPartitions = 2;
uint32_t AutoPartitionsPerNode(const ClusterConfig& config, uint32_t cores);
// The proxy's worker threads: proxy.workers when set; for 0, when every host
// of the file is a loopback address a quarter of `cores`, at least 1 — the
// partitions take half of them (AutoPartitionsPerNode), the clients the rest,
// and a worker that shares its core with the partitions it waits for only
// adds wake-ups (docs/configuration.md) —; one per core for a cluster over
// several machines.
uint32_t EffectiveProxyWorkers(const ClusterConfig& config, uint32_t cores);
uint32_t EffectiveSpinMicros(const ClusterConfig& config, uint32_t cores);
// A proxy worker's spin while it awaits the kv-nodes' replies to a round it
// sent (its transaction client's Fabric::Wait), for transport.spin_us =
// "auto": kAutoSpinMicros when the proxy's workers (EffectiveProxyWorkers)
// are fewer than `cores`, else EffectiveSpinMicros. A worker awaiting a
// reply has nothing else to run until it comes, and fewer spinning workers
// than cores leave a core to the partition thread that answers; the reply
// then finds the worker awake instead of waking it (a wake-up costs tens of
// µs on a virtual machine). A number of spin_us is returned as it is.
uint32_t EffectiveProxySpinMicros(const ClusterConfig& config, uint32_t cores);
// The cores this process may run on (its CPU affinity mask), at least 1.
uint32_t UsableCores();

// UCX_NET_DEVICES for transport.ucx.net_devices: "auto" is "lo" when every
// host of the file is a loopback address (127.0.0.0/8, "localhost"), else ""
// (UCX's choice: every device, RDMA ones included); "all" is ""; any other
// value is returned as it is.
std::string EffectiveNetDevices(const ClusterConfig& config);

// The cluster secret: cluster.secret, or the contents of cluster.secret_file
// with trailing whitespace dropped; empty when neither is set. Errors name
// the file: unreadable, or shorter than kMinClusterSecretBytes. A file that
// group or others may read is used, with a warning to log.
inline constexpr size_t kMinClusterSecretBytes = 16;
struct ClusterSecret {
  std::string value;
  std::string warning;  // "" or why the secret file is at risk
};
Result<ClusterSecret> ReadClusterSecret(const ClusterConfig& config);

// The text of config/default.toml as embedded at build time.
std::string_view DefaultClusterConfigText();

// `config` as TOML, every setting spelled out; ParseClusterConfig of the
// result gives back an equal configuration.
std::string FormatClusterConfig(const ClusterConfig& config);

// One row of the settings reference.
struct SettingDoc {
  std::string key;            // "transport.ring_bytes", "nodes[].port"
  std::string type;           // "size, power of two, 4KiB..1GiB"
  std::string default_value;  // as TOML ("\"1MiB\""), or "required"
  std::string doc;            // one or two sentences
};
// Every setting, in the order of the settings table.
std::vector<SettingDoc> DescribeClusterSettings();
// DescribeClusterSettings() as a Markdown table (the reference section of
// docs/configuration.md).
std::string ClusterSettingsMarkdown();

}  // namespace rampart
