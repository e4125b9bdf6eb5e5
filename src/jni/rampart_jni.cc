// librampart_jni: the transaction client library (txn::Client) for Java, the
// native half of site.ycsb.db.rampart.NativeClient (the `native` mode of the
// YCSB binding, issue 6), so YCSB measures the one-sided GET*/PUT+ path.
//
// Build: the CMake target rampart_jni (built when find_package(JNI) finds a
// JDK; scripts/install-deps.sh installs openjdk-17-jdk-headless):
//
//   cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release
//   ninja -C build/release rampart_jni      # build/release/librampart_jni.so
//
// The static layer libraries are linked into the .so (the whole project is
// compiled position-independent); it depends only on shared system libraries
// (UCX, spdlog, fmt, isa-l, xxhash, libstdc++).
//
// Load: NativeClient's static initializer loads the file named by the system
// property rampart.jni (an absolute path), else System.loadLibrary("rampart_jni")
// from java.library.path:
//
//   java -Drampart.jni=$PWD/build/release/librampart_jni.so ...
//
// The Java API (NativeClient.java documents it) maps one to one onto the
// static natives below:
//
//   new NativeClient(config, isolation, get, put, transport, clientId)
//                      open: LoadClusterConfig + txn::ClientOptionsFromConfig
//                            + Client::Connect; the handle is a jlong owning
//                            a txn::Client
//   multiGet(keys)     Client::MultiGet  -> byte[][] (null for absent keys)
//   multiPut(keys, vs) Client::MultiPut
//   delete(key)        Client::Del (a tombstone write)
//   stats()            Client::stats() as a JSON object string
//   close()            destroys the client (Java makes it idempotent)
//
// Errors: a failed Status throws site.ycsb.db.rampart.RampartException whose
// message is Status::ToString() ("Unavailable: ..."); null arrays or elements
// and a keys/values length mismatch throw IllegalArgumentException; a closed
// handle IllegalStateException; std::bad_alloc OutOfMemoryError. No C++
// exception crosses the JNI boundary: every entry point catches all.
//
// Arrays are copied in with GetByteArrayRegion and out with NewByteArray +
// SetByteArrayRegion; nothing is pinned, no JNI reference is kept between
// calls except the global reference to the byte[] class taken at load.
//
// In the JVM process: JNI_OnLoad hands SIGSEGV, SIGBUS, SIGFPE and SIGILL back
// to the JVM (UCX installs its own error handlers when libucs loads, and the
// JVM relies on SIGSEGV for null checks and safepoints), and logs to stderr at
// warn unless RAMPART_LOG sets the level (stdout is YCSB's).
//
// Thread-safety: a handle is a txn::Client, which is not thread-safe and
// belongs to the thread that created it; NativeClient enforces that in Java.
#include <jni.h>

#include <dlfcn.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <ucs/debug/debug.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/config.h"
#include "common/log.h"
#include "common/status.h"
#include "txn/client.h"
#include "txn/client_config.h"

namespace rampart::jni {
namespace {

constexpr const char* kRampartException = "site/ycsb/db/rampart/RampartException";
constexpr const char* kIllegalArgument = "java/lang/IllegalArgumentException";
constexpr const char* kIllegalState = "java/lang/IllegalStateException";
constexpr const char* kOutOfMemory = "java/lang/OutOfMemoryError";

jclass g_byte_array_class = nullptr;  // global reference to byte[], taken in JNI_OnLoad

// Throws a new `class_name`(message) unless an exception is already pending
// (then that one is the more precise report).
// Allocates nothing in C++, so Guard's handlers can call it.
void Throw(JNIEnv* env, const char* class_name, const char* message) noexcept {
  if (env->ExceptionCheck()) return;
  jclass cls = env->FindClass(class_name);
  if (cls == nullptr) return;  // NoClassDefFoundError is pending
  env->ThrowNew(cls, message);
  env->DeleteLocalRef(cls);
}
void Throw(JNIEnv* env, const char* class_name, const std::string& message) noexcept {
  Throw(env, class_name, message.c_str());
}

void ThrowStatus(JNIEnv* env, const Status& status) {
  Throw(env, kRampartException, status.ToString());
}

// Runs `body` and turns any C++ exception into a Java one; `fallback` is what
// the native method returns when an exception is pending.
template <typename R, typename F>
R Guard(JNIEnv* env, R fallback, F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    Throw(env, kOutOfMemory, "rampart_jni: C++ allocation failed");
  } catch (const std::exception& e) {
    char message[512];
    std::snprintf(message, sizeof message, "Internal: rampart_jni: %s", e.what());
    Throw(env, kRampartException, message);
  } catch (...) {
    Throw(env, kRampartException, "Internal: rampart_jni: unknown C++ exception");
  }
  return fallback;
}

// What a jlong handle points to.
struct Handle {
  std::unique_ptr<txn::Client> client;
};

txn::Client* ClientOf(JNIEnv* env, jlong handle) {
  if (handle == 0) {
    Throw(env, kIllegalState, "NativeClient is closed");
    return nullptr;
  }
  return reinterpret_cast<Handle*>(handle)->client.get();
}

// A Java String as UTF-8 (modified UTF-8, the same for the ASCII names and
// paths passed here); nullopt with IllegalArgumentException pending for null.
std::optional<std::string> FromJavaString(JNIEnv* env, jstring s, const char* what) {
  if (s == nullptr) {
    Throw(env, kIllegalArgument, StrCat(what, " is null"));
    return std::nullopt;
  }
  const char* chars = env->GetStringUTFChars(s, nullptr);
  if (chars == nullptr) return std::nullopt;  // OutOfMemoryError pending
  std::string out(chars);
  env->ReleaseStringUTFChars(s, chars);
  return out;
}

// A Java byte[] copied into a string; nullopt with an exception pending when
// it is null (IllegalArgumentException naming what[index], or what when index
// is -1) or the copy failed.
std::optional<std::string> FromJavaBytes(JNIEnv* env, jbyteArray array, const char* what,
                                         jsize index = -1) {
  if (array == nullptr) {
    Throw(env, kIllegalArgument,
          index < 0 ? StrCat(what, " is null") : StrCat(what, "[", index, "] is null"));
    return std::nullopt;
  }
  const jsize n = env->GetArrayLength(array);
  std::string out(static_cast<size_t>(n), '\0');
  if (n > 0) env->GetByteArrayRegion(array, 0, n, reinterpret_cast<jbyte*>(out.data()));
  if (env->ExceptionCheck()) return std::nullopt;
  return out;
}

// Every element of a byte[][], copied; nullopt with an exception pending on a
// null array or element.
std::optional<std::vector<std::string>> FromJavaByteArrays(JNIEnv* env, jobjectArray array,
                                                           const char* what) {
  if (array == nullptr) {
    Throw(env, kIllegalArgument, StrCat(what, " is null"));
    return std::nullopt;
  }
  const jsize n = env->GetArrayLength(array);
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(n));
  for (jsize i = 0; i < n; ++i) {
    auto element = static_cast<jbyteArray>(env->GetObjectArrayElement(array, i));
    if (env->ExceptionCheck()) return std::nullopt;
    std::optional<std::string> bytes = FromJavaBytes(env, element, what, i);
    if (element != nullptr) env->DeleteLocalRef(element);
    if (!bytes) return std::nullopt;
    out.push_back(std::move(*bytes));
  }
  return out;
}

// values[i] as byte[i], absent values as null; nullptr with an exception pending on failure.
jobjectArray ToJavaValues(JNIEnv* env, const std::vector<std::optional<std::string>>& values) {
  jobjectArray out =
      env->NewObjectArray(static_cast<jsize>(values.size()), g_byte_array_class, nullptr);
  if (out == nullptr) return nullptr;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].has_value()) continue;
    const std::string& v = *values[i];
    jbyteArray bytes = env->NewByteArray(static_cast<jsize>(v.size()));
    if (bytes == nullptr) return nullptr;
    env->SetByteArrayRegion(bytes, 0, static_cast<jsize>(v.size()),
                            reinterpret_cast<const jbyte*>(v.data()));
    env->SetObjectArrayElement(out, static_cast<jsize>(i), bytes);
    env->DeleteLocalRef(bytes);
    if (env->ExceptionCheck()) return nullptr;
  }
  return out;
}

// libucs, when it loads (before JNI_OnLoad), installs its own handler for
// UCX_ERROR_SIGNALS (default ILL, SEGV, BUS, FPE) over the JVM's, which turns
// the JVM's implicit null checks into "Caught signal 11" and a frozen process
// (openucx/ucx#3337). Give back each one whose handler is in libucs.
void ReturnErrorSignalsToTheJvm() {
  for (int signum : {SIGILL, SIGSEGV, SIGBUS, SIGFPE}) {
    struct sigaction current {};
    if (sigaction(signum, nullptr, &current) != 0) continue;
    void* handler = (current.sa_flags & SA_SIGINFO) != 0
                        ? reinterpret_cast<void*>(current.sa_sigaction)
                        : reinterpret_cast<void*>(current.sa_handler);
    Dl_info info{};
    if (dladdr(handler, &info) == 0 || info.dli_fname == nullptr) continue;
    if (std::string_view(info.dli_fname).find("libucs") == std::string_view::npos) continue;
    ucs_debug_disable_signal(signum);  // restores the handler UCX replaced
    spdlog::debug("rampart_jni: signal {} handed back from UCX to the JVM", signum);
  }
}

std::string StatsJson(const txn::Client::Stats& s) {
  return StrCat("{\"transactions\":", s.transactions, ",\"repair_rounds\":", s.repair_rounds,
                ",\"slot_reads\":", s.slot_reads, ",\"slot_rejects\":", s.slot_rejects,
                ",\"cache_misses\":", s.cache_misses, ",\"reconnects\":", s.reconnects, "}");
}

}  // namespace
}  // namespace rampart::jni

using namespace rampart;       // NOLINT: the entry points below are extern "C"
using namespace rampart::jni;  // NOLINT

extern "C" {

JNIEXPORT jint JNI_OnLoad(JavaVM* vm, void* /*reserved*/) {
  try {
    InitLogging("warn", "rampart-jni");
    ReturnErrorSignalsToTheJvm();
  } catch (...) {
    return JNI_ERR;
  }
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  jclass local = env->FindClass("[B");
  if (local == nullptr) return JNI_ERR;
  g_byte_array_class = static_cast<jclass>(env->NewGlobalRef(local));
  env->DeleteLocalRef(local);
  if (g_byte_array_class == nullptr) return JNI_ERR;
  return JNI_VERSION_1_8;
}

JNIEXPORT void JNI_OnUnload(JavaVM* vm, void* /*reserved*/) {
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_8) == JNI_OK &&
      g_byte_array_class != nullptr) {
    env->DeleteGlobalRef(g_byte_array_class);
  }
  g_byte_array_class = nullptr;
}

JNIEXPORT jlong JNICALL Java_site_ycsb_db_rampart_NativeClient_open(
    JNIEnv* env, jclass, jstring config_path, jstring isolation, jstring get, jstring put,
    jstring transport, jint client_id) {
  return Guard(env, jlong{0}, [&]() -> jlong {
    auto path = FromJavaString(env, config_path, "configPath");
    if (!path) return 0;
    auto iso = FromJavaString(env, isolation, "isolation");
    if (!iso) return 0;
    auto get_mode = FromJavaString(env, get, "get");
    if (!get_mode) return 0;
    auto put_mode = FromJavaString(env, put, "put");
    if (!put_mode) return 0;
    auto backend = FromJavaString(env, transport, "transport");
    if (!backend) return 0;
    if (client_id < 0) {
      ThrowStatus(env, InvalidArgument("client id ", client_id, " is negative"));
      return 0;
    }
    Result<ClusterConfig> config = LoadClusterConfig(*path);
    if (!config.ok()) {
      ThrowStatus(env, config.status());
      return 0;
    }
    Result<txn::ClientOptions> options =
        txn::ClientOptionsFromConfig(*config, *iso, *get_mode, *put_mode, *backend);
    if (!options.ok()) {
      ThrowStatus(env, options.status());
      return 0;
    }
    options->client_id = static_cast<uint32_t>(client_id);
    Result<std::unique_ptr<txn::Client>> client = txn::Client::Connect(*options);
    if (!client.ok()) {
      ThrowStatus(env, client.status());
      return 0;
    }
    auto handle = std::make_unique<Handle>();
    handle->client = std::move(*client);
    return reinterpret_cast<jlong>(handle.release());
  });
}

JNIEXPORT jobjectArray JNICALL Java_site_ycsb_db_rampart_NativeClient_multiGet0(
    JNIEnv* env, jclass, jlong handle, jobjectArray keys) {
  return Guard(env, static_cast<jobjectArray>(nullptr), [&]() -> jobjectArray {
    txn::Client* client = ClientOf(env, handle);
    if (client == nullptr) return nullptr;
    auto key_strings = FromJavaByteArrays(env, keys, "keys");
    if (!key_strings) return nullptr;
    auto values = client->MultiGet(*key_strings);
    if (!values.ok()) {
      ThrowStatus(env, values.status());
      return nullptr;
    }
    return ToJavaValues(env, *values);
  });
}

JNIEXPORT void JNICALL Java_site_ycsb_db_rampart_NativeClient_multiPut0(
    JNIEnv* env, jclass, jlong handle, jobjectArray keys, jobjectArray values) {
  Guard(env, 0, [&] {
    txn::Client* client = ClientOf(env, handle);
    if (client == nullptr) return 0;
    if (keys != nullptr && values != nullptr &&
        env->GetArrayLength(keys) != env->GetArrayLength(values)) {
      Throw(env, kIllegalArgument,
            StrCat(env->GetArrayLength(keys), " keys but ", env->GetArrayLength(values),
                   " values"));
      return 0;
    }
    auto key_strings = FromJavaByteArrays(env, keys, "keys");
    if (!key_strings) return 0;
    auto value_strings = FromJavaByteArrays(env, values, "values");
    if (!value_strings) return 0;
    std::vector<std::pair<std::string, std::string>> pairs;
    pairs.reserve(key_strings->size());
    for (size_t i = 0; i < key_strings->size(); ++i) {
      pairs.emplace_back(std::move((*key_strings)[i]), std::move((*value_strings)[i]));
    }
    Status status = client->MultiPut(pairs);
    if (!status.ok()) ThrowStatus(env, status);
    return 0;
  });
}

JNIEXPORT void JNICALL Java_site_ycsb_db_rampart_NativeClient_delete0(JNIEnv* env, jclass,
                                                                      jlong handle,
                                                                      jbyteArray key) {
  Guard(env, 0, [&] {
    txn::Client* client = ClientOf(env, handle);
    if (client == nullptr) return 0;
    auto key_string = FromJavaBytes(env, key, "key");
    if (!key_string) return 0;
    Status status = client->Del(*key_string);
    if (!status.ok()) ThrowStatus(env, status);
    return 0;
  });
}

JNIEXPORT jstring JNICALL Java_site_ycsb_db_rampart_NativeClient_stats0(JNIEnv* env, jclass,
                                                                       jlong handle) {
  return Guard(env, static_cast<jstring>(nullptr), [&]() -> jstring {
    txn::Client* client = ClientOf(env, handle);
    if (client == nullptr) return nullptr;
    return env->NewStringUTF(StatsJson(client->stats()).c_str());
  });
}

JNIEXPORT void JNICALL Java_site_ycsb_db_rampart_NativeClient_close0(JNIEnv* env, jclass,
                                                                     jlong handle) {
  Guard(env, 0, [&] {
    delete reinterpret_cast<Handle*>(handle);  // null (0) is a no-op
    return 0;
  });
}

}  // extern "C"
