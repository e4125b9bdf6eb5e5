// Whether a host of the cluster file is this machine: `rampart up` starts the
// processes whose host is local, and the transport reaches a peer on this
// host over shared memory and any other over the network.
//
// "Local" means: the name resolves (IPv4) to an address assigned to an
// interface of this process's network namespace, loopback included. Two
// network namespaces of one kernel are two hosts, as they are to every
// network protocol.
//
// Thread-safety: any thread. Each call reads the interfaces afresh
// (getifaddrs) and may resolve a name (getaddrinfo, which can block on DNS).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace rampart {

// The IPv4 addresses of this network namespace's interfaces, dotted
// ("127.0.0.1", "10.213.0.2"), whether the interface is up or not.
Result<std::vector<std::string>> LocalAddresses();

// True when `host` (a name or a dotted IPv4 address) resolves to a loopback
// address or to one of LocalAddresses(). False when it does not resolve.
bool IsLocalHost(const std::string& host);

// True when `a` and `b` are written alike or resolve to a common IPv4
// address.
bool SameHost(const std::string& a, const std::string& b);

}  // namespace rampart
