#include "common/local_host.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>

namespace rampart {
namespace {

std::string Dotted(const in_addr& a) {
  char text[INET_ADDRSTRLEN] = "";
  inet_ntop(AF_INET, &a, text, sizeof text);
  return text;
}

// Every IPv4 address `host` resolves to; empty when it does not resolve.
std::vector<in_addr> Resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  std::vector<in_addr> out;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &result) != 0) return out;
  for (addrinfo* a = result; a != nullptr; a = a->ai_next) {
    out.push_back(reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr);
  }
  freeaddrinfo(result);
  return out;
}

}  // namespace

Result<std::vector<std::string>> LocalAddresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return ErrnoStatus("getifaddrs", errno);
  std::vector<std::string> out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    out.push_back(Dotted(reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr));
  }
  freeifaddrs(list);
  return out;
}

bool SameHost(const std::string& a, const std::string& b) {
  if (a == b) return true;
  const std::vector<in_addr> ra = Resolve(a);
  for (const in_addr& x : Resolve(b)) {
    for (const in_addr& y : ra) {
      if (x.s_addr == y.s_addr) return true;
    }
  }
  return false;
}

bool IsLocalHost(const std::string& host) {
  const std::vector<in_addr> resolved = Resolve(host);
  if (resolved.empty()) return false;
  const Result<std::vector<std::string>> local = LocalAddresses();
  for (const in_addr& a : resolved) {
    if ((ntohl(a.s_addr) >> 24) == 127) return true;  // 127.0.0.0/8 is always this host
    if (local.ok() && std::find(local->begin(), local->end(), Dotted(a)) != local->end()) {
      return true;
    }
  }
  return false;
}

}  // namespace rampart
