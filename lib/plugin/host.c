/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The rd_kafka_* functions of the plugin, each forwarding to the
 * librdkafka that loaded it (host.h says why). They are compiled with
 * hidden visibility, so the agent's calls bind to them inside the plugin
 * and the process's librdkafka never sees them. The table is filled once,
 * by dc_plugin_host_bind() in conf_init, before any of them can be called:
 * librdkafka calls nothing of the plugin before conf_init.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "plugin/host.h"

#include <dlfcn.h>
#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Every function forwarded: return type, name, parameters, arguments. */
#define HOST_FUNCS(X)                                                          \
  X(rd_kafka_conf_t *, rd_kafka_conf_dup, (const rd_kafka_conf_t *conf),       \
    (conf))                                                                    \
  X(rd_kafka_conf_res_t, rd_kafka_conf_set,                                    \
    (rd_kafka_conf_t * conf, const char *name, const char *value,             \
     char *errstr, size_t errstr_size),                                        \
    (conf, name, value, errstr, errstr_size))                                  \
  X(rd_kafka_conf_res_t, rd_kafka_conf_get,                                    \
    (const rd_kafka_conf_t *conf, const char *name, char *dest,                \
     size_t *dest_size),                                                       \
    (conf, name, dest, dest_size))                                             \
  X(rd_kafka_topic_conf_t *, rd_kafka_conf_get_default_topic_conf,             \
    (rd_kafka_conf_t * conf), (conf))                                          \
  X(rd_kafka_topic_conf_t *, rd_kafka_topic_conf_new, (void), ())              \
  X(rd_kafka_conf_res_t, rd_kafka_topic_conf_get,                              \
    (const rd_kafka_topic_conf_t *conf, const char *name, char *dest,          \
     size_t *dest_size),                                                       \
    (conf, name, dest, dest_size))                                             \
  X(const char *, rd_kafka_version_str, (void), ())                            \
  X(const char *, rd_kafka_err2str, (rd_kafka_resp_err_t err), (err))          \
  X(rd_kafka_type_t, rd_kafka_type, (const rd_kafka_t *rk), (rk))              \
  X(rd_kafka_resp_err_t, rd_kafka_conf_interceptor_add_on_conf_set,            \
    (rd_kafka_conf_t * conf, const char *ic_name,                              \
     rd_kafka_interceptor_f_on_conf_set_t *f, void *ic_opaque),                \
    (conf, ic_name, f, ic_opaque))                                             \
  X(rd_kafka_resp_err_t, rd_kafka_conf_interceptor_add_on_conf_dup,            \
    (rd_kafka_conf_t * conf, const char *ic_name,                              \
     rd_kafka_interceptor_f_on_conf_dup_t *f, void *ic_opaque),                \
    (conf, ic_name, f, ic_opaque))                                             \
  X(rd_kafka_resp_err_t, rd_kafka_conf_interceptor_add_on_conf_destroy,        \
    (rd_kafka_conf_t * conf, const char *ic_name,                              \
     rd_kafka_interceptor_f_on_conf_destroy_t *f, void *ic_opaque),            \
    (conf, ic_name, f, ic_opaque))                                             \
  X(rd_kafka_resp_err_t, rd_kafka_conf_interceptor_add_on_new,                 \
    (rd_kafka_conf_t * conf, const char *ic_name,                              \
     rd_kafka_interceptor_f_on_new_t *f, void *ic_opaque),                     \
    (conf, ic_name, f, ic_opaque))                                             \
  X(rd_kafka_resp_err_t, rd_kafka_interceptor_add_on_thread_start,            \
    (rd_kafka_t * rk, const char *ic_name,                                     \
     rd_kafka_interceptor_f_on_thread_start_t *f, void *ic_opaque),            \
    (rk, ic_name, f, ic_opaque))                                               \
  X(rd_kafka_resp_err_t, rd_kafka_interceptor_add_on_destroy,                  \
    (rd_kafka_t * rk, const char *ic_name,                                     \
     rd_kafka_interceptor_f_on_destroy_t *f, void *ic_opaque),                 \
    (rk, ic_name, f, ic_opaque))

/* The ones returning nothing. */
#define HOST_VOID_FUNCS(X)                                                     \
  X(rd_kafka_conf_destroy, (rd_kafka_conf_t * conf), (conf))                   \
  X(rd_kafka_topic_conf_destroy, (rd_kafka_topic_conf_t * conf), (conf))

static struct {
#define FIELD(ret, name, params, args) ret(*name) params;
#define VFIELD(name, params, args) void(*name) params;
  HOST_FUNCS(FIELD)
  HOST_VOID_FUNCS(VFIELD)
#undef FIELD
#undef VFIELD
} host;

#define FORWARD(ret, name, params, args)                                       \
  ret name params { return host.name args; }
#define VFORWARD(name, params, args)                                           \
  void name params { host.name args; }
HOST_FUNCS(FORWARD)
HOST_VOID_FUNCS(VFORWARD)
#undef FORWARD
#undef VFORWARD

static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;
static void *bound_base; /* the load address of the bound librdkafka */
static char bound_file[256];

/* dlsym's answer into a function pointer field (ISO C has no cast from
 * void * to a function pointer; POSIX guarantees the representation). */
static int resolve(void *lib, const char *name, void *field, char *errstr,
                   size_t errstr_size) {
  void *sym = dlsym(lib, name);
  if (!sym) {
    snprintf(errstr, errstr_size, "the librdkafka that loaded the dynconf "
             "plugin (%s) does not export %s", bound_file, name);
    return -1;
  }
  memcpy(field, &sym, sizeof(sym));
  return 0;
}

static int resolve_all(void *lib, char *errstr, size_t errstr_size) {
#define RESOLVE(ret, name, params, args)                                       \
  if (resolve(lib, #name, &host.name, errstr, errstr_size))                    \
    return -1;
#define VRESOLVE(name, params, args) RESOLVE(void, name, params, args)
  HOST_FUNCS(RESOLVE)
  HOST_VOID_FUNCS(VRESOLVE)
#undef RESOLVE
#undef VRESOLVE
  return 0;
}

/* Opens the library (or program) that holds caller, without loading
 * anything new. NULL with errstr. */
static void *open_caller(const Dl_info *info, char *errstr,
                         size_t errstr_size) {
  /* A librdkafka linked into the program itself: its symbols are found
   * through the program's handle when it exports them (-rdynamic). */
  void *lib = dlopen(info->dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (!lib)
    lib = dlopen(NULL, RTLD_NOW);
  if (!lib)
    snprintf(errstr, errstr_size, "cannot open the librdkafka that loaded "
             "the dynconf plugin (%s): %s", info->dli_fname, dlerror());
  return lib;
}

int dc_plugin_host_bind(const void *caller, char *errstr, size_t errstr_size) {
  Dl_info info;
  if (!dladdr(caller, &info) || !info.dli_fname) {
    snprintf(errstr, errstr_size, "cannot tell which librdkafka loaded the "
             "dynconf plugin");
    return -1;
  }
  pthread_mutex_lock(&bind_lock);
  int r = 0;
  if (bound_base && bound_base != info.dli_fbase) {
    snprintf(errstr, errstr_size, "the dynconf plugin already serves the "
             "librdkafka in %s; the one in %s, in the same process, cannot "
             "load it too", bound_file, info.dli_fname);
    r = -1;
  } else if (!bound_base) {
    snprintf(bound_file, sizeof(bound_file), "%s", info.dli_fname);
    void *lib = open_caller(&info, errstr, errstr_size);
    /* The handle stays open: the plugin calls into it until exit. */
    r = lib ? resolve_all(lib, errstr, errstr_size) : -1;
    if (!r)
      bound_base = info.dli_fbase;
  }
  pthread_mutex_unlock(&bind_lock);
  return r;
}
