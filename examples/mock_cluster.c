/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mock_cluster: runs librdkafka's built-in mock Kafka cluster (rdkafka_mock.h)
 * as a process, so the example producer and consumer, the demo and the soak
 * test have real Produce/Fetch/consumer-group brokers on loopback without a
 * JVM. It serves no config APIs; dynconfd is the config server.
 *
 *   mock_cluster [--brokers N] [--topic NAME --partitions P]... [--control]
 *
 * Prints "bootstrap HOST:PORT[,HOST:PORT...]" on stdout once the brokers
 * accept connections, then runs until SIGTERM or SIGINT. With --control it
 * also reads commands from stdin, one per line, and answers each with one
 * line on stdout (mock_control.c: brokers down and up, leaders,
 * coordinators, injected errors); end of input stops it, so the cluster
 * never outlives the process driving it.
 */
#include "mock_control.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_TOPICS 64

static volatile sig_atomic_t stop;
static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static void usage(FILE *fp, const char *argv0) {
  fprintf(fp,
          "Usage: %s [--brokers N] [--topic NAME [--partitions P]]...\n"
          "\n"
          "Runs librdkafka's mock Kafka cluster on 127.0.0.1 until SIGTERM or\n"
          "SIGINT. Prints 'bootstrap HOST:PORT,...' on stdout when ready.\n"
          "\n"
          "  --brokers N       number of mock brokers (default 1)\n"
          "  --topic NAME      create topic NAME (repeatable)\n"
          "  --partitions P    partitions of the preceding --topic (default 1)\n"
          "  --debug CONTEXTS  librdkafka debug contexts (e.g. mock)\n"
          "  --control         read control commands from stdin (down B, up B,\n"
          "                    rtt B MS, leader TOPIC PART B, coord group|txn\n"
          "                    KEY B, topic NAME P, err APIKEY ERROR..., quit);\n"
          "                    one reply line each; end of input stops it\n"
          "  --help            this text\n",
          argv0);
}

/* Parses a positive int in [1, max]; -1 when it is not one. */
static int parse_count(const char *s, int max) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 1 || v > max)
    return -1;
  return (int)v;
}

/* Waits up to 100 ms for input on stdin and answers every whole command
 * line in it (read with read(2), so lines that arrive together are all
 * seen). 1 when the cluster should stop (quit, end of input). */
static int serve_control(rd_kafka_mock_cluster_t *mc) {
  static char buf[4096];
  static size_t len;
  struct pollfd p = {.fd = 0, .events = POLLIN};
  if (poll(&p, 1, 100) <= 0)
    return 0;
  ssize_t k = read(0, buf + len, sizeof(buf) - 1 - len);
  if (k <= 0)
    return k < 0 && errno == EINTR ? 0 : 1;
  len += (size_t)k;
  buf[len] = '\0';
  char *line = buf, *nl;
  int quit = 0;
  while (!quit && (nl = strchr(line, '\n'))) {
    *nl = '\0';
    char reply[256];
    quit = mock_control_line(mc, line, reply, sizeof(reply));
    printf("%s\n", reply);
    line = nl + 1;
  }
  fflush(stdout);
  len -= (size_t)(line - buf);
  memmove(buf, line, len);
  if (len == sizeof(buf) - 1) /* a line longer than the buffer */
    len = 0;
  return quit;
}

/* The command line. */
typedef struct mock_opts {
  int brokers, ntopics;
  const char *debug;
  bool control;
  const char *topics[MAX_TOPICS];
  int partitions[MAX_TOPICS];
} mock_opts_t;

/* Fills o from argv. False when the run ends here, with *exit_code: 0
 * after --help, 2 after a bad flag (said). */
static bool parse_args(int argc, char **argv, mock_opts_t *o,
                       int *exit_code) {
  *exit_code = 2;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout, argv[0]);
      *exit_code = 0;
      return false;
    }
    if (!strcmp(a, "--control")) {
      o->control = true;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "%s: %s needs a value (or unknown flag)\n", argv[0], a);
      usage(stderr, argv[0]);
      return false;
    }
    const char *v = argv[++i];
    if (!strcmp(a, "--brokers")) {
      if ((o->brokers = parse_count(v, 64)) < 0) {
        fprintf(stderr, "%s: --brokers wants 1..64, not '%s'\n", argv[0], v);
        return false;
      }
    } else if (!strcmp(a, "--debug")) {
      o->debug = v;
    } else if (!strcmp(a, "--topic")) {
      if (o->ntopics == MAX_TOPICS || !*v) {
        fprintf(stderr, "%s: bad or too many --topic\n", argv[0]);
        return false;
      }
      o->topics[o->ntopics] = v;
      o->partitions[o->ntopics++] = 1;
    } else if (!strcmp(a, "--partitions")) {
      int p = parse_count(v, 10000);
      if (!o->ntopics || p < 0) {
        fprintf(stderr, "%s: --partitions wants 1..10000 after a --topic\n",
                argv[0]);
        return false;
      }
      o->partitions[o->ntopics - 1] = p;
    } else {
      fprintf(stderr, "%s: unknown flag %s\n", argv[0], a);
      usage(stderr, argv[0]);
      return false;
    }
  }
  return true;
}

/* The mock cluster lives inside an rd_kafka_t; any producer will do. It
 * never connects anywhere itself (no bootstrap.servers). NULL, with
 * *exit_code, after saying why not. */
static rd_kafka_t *new_host_handle(const char *argv0, const char *debug,
                                   int *exit_code) {
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (debug && rd_kafka_conf_set(conf, "debug", debug, errstr,
                                 sizeof(errstr))) {
    fprintf(stderr, "%s: --debug: %s\n", argv0, errstr);
    rd_kafka_conf_destroy(conf);
    *exit_code = 2;
    return NULL;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    fprintf(stderr, "%s: rd_kafka_new: %s\n", argv0, errstr);
    *exit_code = 1;
  }
  return rk;
}

/* The topics asked for, each replicated on up to 3 brokers: 0, or 1
 * after saying which one failed. */
static int create_topics(const char *argv0, rd_kafka_mock_cluster_t *mc,
                         const mock_opts_t *o) {
  for (int t = 0; t < o->ntopics; t++) {
    rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(
        mc, o->topics[t], o->partitions[t], o->brokers < 3 ? o->brokers : 3);
    if (err) {
      fprintf(stderr, "%s: creating topic %s: %s\n", argv0, o->topics[t],
              rd_kafka_err2str(err));
      return 1;
    }
  }
  return 0;
}

/* Says the bootstrap addresses, then serves until a signal (or, with
 * --control, quit or the end of input). */
static void run(rd_kafka_mock_cluster_t *mc, bool control) {
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mc));
  fflush(stdout);
  while (!stop) {
    if (control) {
      if (serve_control(mc))
        break;
      continue;
    }
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL);
  }
}

int main(int argc, char **argv) {
  mock_opts_t o = {.brokers = 1};
  int rc;
  if (!parse_args(argc, argv, &o, &rc))
    return rc;
  rd_kafka_t *rk = new_host_handle(argv[0], o.debug, &rc);
  if (!rk)
    return rc;
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, o.brokers);
  if (!mc) {
    fprintf(stderr, "%s: cannot create the mock cluster\n", argv[0]);
    rd_kafka_destroy(rk);
    return 1;
  }
  rc = create_topics(argv[0], mc, &o);
  if (!rc)
    run(mc, o.control);
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return rc;
}
