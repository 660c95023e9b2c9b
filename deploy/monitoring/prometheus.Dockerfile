# Prometheus from Debian's package, for compose.yaml (the config and rules are
# mounted at /etc/prometheus by compose).
FROM debian:12-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus \
 && rm -rf /var/lib/apt/lists/*
USER prometheus
EXPOSE 9090/tcp
ENTRYPOINT ["/usr/bin/prometheus", "--config.file=/etc/prometheus/prometheus.yml", \
            "--storage.tsdb.path=/var/lib/prometheus/metrics2", "--web.listen-address=0.0.0.0:9090"]
