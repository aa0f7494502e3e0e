# Viewfinder in a container. Mirrors scripts/install-deps: build with the -dev packages,
# run with only the runtime libraries, as a non-root user in group video.
#
#   docker build -t viewfinder .
#   docker run --rm -p 8080:8080 --device /dev/video0 viewfinder
#   docker run --rm -p 8080:8080 viewfinder          # synthetic cameras

FROM swift:6.1-bookworm AS build
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends pkg-config libmicrohttpd-dev libgnutls28-dev libturbojpeg0-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
RUN swift package resolve
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --static-swift-stdlib --product viewfinder \
 && cp "$(swift build -c release --show-bin-path)/viewfinder" /viewfinder

FROM debian:bookworm-slim
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends libmicrohttpd12 libgnutls30 libturbojpeg0 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --no-create-home --gid video --home-dir /app viewfinder
WORKDIR /app
COPY --from=build /viewfinder /usr/local/bin/viewfinder
COPY Public ./Public
COPY config.json ./config.json
RUN mkdir -p /app/photos && chown viewfinder:video /app/photos
USER viewfinder:video
EXPOSE 8080
# Inside the container listen on every interface; outside, publish the port as needed.
CMD ["viewfinder", "--host", "0.0.0.0", "--port", "8080"]
