# One image with every jobwheel binary: scheduler, registry, dispatcher, console,
# demo_executor, xxl_gateway, http_executor and jobwheelctl in /usr/local/bin, and the console's
# web pages in /usr/share/jobwheel/console/web (its --web_root). The Helm chart (deploy/k8s/jobwheel) picks
# the binary of each Deployment with `command`, e.g. `docker run IMAGE registry --help`.
#
#   docker build -t registry.example.com/jobwheel:0.1.0 .
#
# Everything comes from Debian bookworm packages; the build fetches nothing else (Bazel binds
# the system libraries, see WORKSPACE and third_party/system).

############################################################################ build
FROM debian:bookworm AS build

ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      bazel-bootstrap bazel-rules-java bazel-platforms \
      g++ \
      libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev \
      libabsl-dev libpqxx-dev prometheus-cpp-dev libspdlog-dev \
      libcpp-httplib-dev libssl-dev libcurl4-openssl-dev \
      libgtest-dev libgmock-dev \
      tzdata ca-certificates \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . .

# Narrow this (e.g. to the six binary targets) to skip building the tests.
ARG BAZEL_TARGETS="//services/... //sdk/examples/... //tools/..."
RUN bazel build --jobs=2 ${BAZEL_TARGETS} \
 && mkdir -p /out \
 && install -m 0755 \
      bazel-bin/services/scheduler/scheduler \
      bazel-bin/services/registry/registry \
      bazel-bin/services/dispatcher/dispatcher \
      bazel-bin/services/console/console \
      bazel-bin/sdk/examples/demo_executor \
      bazel-bin/services/xxl_gateway/xxl_gateway \
      bazel-bin/services/http_executor/http_executor \
      bazel-bin/tools/jobwheelctl/jobwheelctl \
      /out/ \
 && mkdir -p /web \
 && cp -R services/console/web/. /web/ \
 && rm -f /web/BUILD \
 && bazel shutdown

############################################################################ runtime
FROM debian:bookworm-slim

# Only the shared libraries the binaries link (their dependencies come along: libgrpc29,
# libre2-9, libc-ares2, libssl3, libpq5, libfmt9, libcivetweb1, libbrotli1, zlib1g).
# libcpp-httplib0.11: the console's HTTP server; libcurl4: the HTTP executor's calls.
# tzdata: cron time zones; ca-certificates: TLS.
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libgrpc++1.51 libprotobuf32 libabsl20220623 libpqxx-6.4 \
      libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libspdlog1.10 \
      libcpp-httplib0.11 libcurl4 \
      tzdata ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --home-dir /home/nonroot --create-home \
      --shell /usr/sbin/nologin nonroot

COPY --from=build /out/ /usr/local/bin/
# The console's pages (plain ES modules, served as they are): --web_root of the chart.
COPY --from=build /web/ /usr/share/jobwheel/console/web/

# Fail the build, not the pod, when a runtime library is missing.
RUN set -e; for b in /usr/local/bin/*; do \
      if ldd "$b" | grep -q 'not found'; then echo "$b:"; ldd "$b" | grep 'not found'; exit 1; fi; \
    done; \
    test -f /usr/share/jobwheel/console/web/index.html

LABEL org.opencontainers.image.title="jobwheel" \
      org.opencontainers.image.description="jobwheel distributed job scheduler: scheduler, registry, dispatcher, console, demo_executor, jobwheelctl"

# gRPC: scheduler 7100, registry 7101, dispatcher 7102, demo executor 7200, HTTP executor 7220;
# console HTTP 7180; metrics: 9100, 9101, 9102, 9200, 9220, 9180.
EXPOSE 7100 7101 7102 7180 7200 7220 9100 9101 9102 9180 9200 9220

USER 65532:65532
WORKDIR /home/nonroot
CMD ["scheduler"]
