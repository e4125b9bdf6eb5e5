// libFuzzer target for RESTORE's payload decoder (proxy/redis_dump.h). `make
// fuzz-test` builds it with ASan/UBSan and runs it for a bounded time on a
// copy of dump_corpus/ (payload bodies: an RDB type byte and a value); a crash
// or a failed check below fails make.
//
// Each input is decoded twice: as it is (so the footer checks are reached)
// and with a valid footer appended (so the encodings behind it are). Beyond
// "no crash, no read outside the input": an error is one of Redis's two
// texts or the decode budget's, and a value decoded is written again by EncodeDumpPayload and reads
// back the same.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "proxy/redis_dump.h"

namespace {

using rampart::proxy::DecodeDumpPayload;
using rampart::proxy::DumpedValue;
using rampart::proxy::EncodeDumpPayload;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "dump_fuzz: %s\n", what);
    std::abort();
  }
}

bool Same(const DumpedValue& a, const DumpedValue& b) {
  return a.type == b.type && a.string == b.string && a.elements == b.elements &&
         a.fields == b.fields && a.scored.size() == b.scored.size() &&
         std::equal(a.scored.begin(), a.scored.end(), b.scored.begin(),
                    [](const auto& x, const auto& y) {
                      return x.first == y.first &&
                             std::bit_cast<uint64_t>(x.second) == std::bit_cast<uint64_t>(y.second);
                    });
}

void DecodeOne(std::string_view payload) {
  auto v = DecodeDumpPayload(payload);
  if (!v.ok()) {
    const std::string m(v.status().message());
    Check(m == "ERR DUMP payload version or checksum are wrong" ||
              m.starts_with("ERR Bad data format") || m.starts_with("ERR rampart: the DUMP payload"),
          "an error that is not one of the decoder's texts");
    return;
  }
  auto again = DecodeDumpPayload(EncodeDumpPayload(*v));
  Check(again.ok() && Same(*again, *v), "a decoded value does not survive EncodeDumpPayload");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  DecodeOne(body);
  rampart::proxy::AppendDumpFooter(body, rampart::proxy::kRestoreMaxRdbVersion);
  DecodeOne(body);
  return 0;
}
