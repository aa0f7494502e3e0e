# Viewfinder in a container. Mirrors scripts/install-deps: build with the -dev packages,
# run with only the runtime libraries, as a non-root user in group video.
#
#   docker build --build-arg VERSION="$(scripts/version)" -t viewfinder .
#   docker run --rm -i -v "$PWD/viewfinder.json:/app/config.json" viewfinder \
#       viewfinder user add ann --role operator <password.txt
#   docker run --rm -v "$PWD/viewfinder.json:/app/config.json" --device /dev/video0 \
#       --group-add video -p 8080:8080 viewfinder
#
# It listens on 0.0.0.0 inside the container, so it is secure by default: it refuses to start
# until the configuration has users (or says "auth": "none" on purpose). Without --device it
# serves the synthetic cameras.
#
# The build image: Package.swift is swift-tools-version 6.0 and the code uses
# Synchronization.Mutex and typed throws (Swift 6.0+), so 6.1 builds it; development uses 6.3.

FROM swift:6.1-bookworm AS build
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends pkg-config libasound2-dev libmicrohttpd-dev libturbojpeg0-dev libcrypt-dev libgnutls28-dev \
    libavcodec-dev libavformat-dev libswscale-dev libswresample-dev libavutil-dev libzbar-dev libqrencode-dev libmosquitto-dev libxml2-dev libcurl4-gnutls-dev libcamera-dev \
    libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libgstreamer-plugins-bad1.0-dev libgstrtspserver-1.0-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
RUN swift package resolve
COPY Sources ./Sources
COPY Tests ./Tests
# viewfinder --version: the .git directory is not in the context, so the version comes in
# as an argument (empty: the committed fallback).
ARG VERSION=""
RUN if [ -n "$VERSION" ]; then printf 'let viewfinderVersion = "%s"\n' "$VERSION" >Sources/viewfinder/Version.swift; fi
RUN swift build -c release --static-swift-stdlib --product viewfinder \
 && cp "$(swift build -c release --show-bin-path)/viewfinder" /viewfinder

FROM debian:bookworm-slim
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends libmicrohttpd12 libturbojpeg0 libcrypt1 libgnutls30 \
    libavcodec59 libavformat59 libswscale6 libavutil57 libzbar0 libqrencode4 libmosquitto1 libcamera0.0.3 libcamera-ipa libxml2 libcurl3-gnutls libasound2 ca-certificates \
    libgstrtspserver-1.0-0 libgstreamer-plugins-bad1.0-0 gstreamer1.0-plugins-base gstreamer1.0-plugins-good \
    gstreamer1.0-plugins-bad gstreamer1.0-nice \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --no-create-home --gid video --groups audio --home-dir /app viewfinder
WORKDIR /app
COPY --from=build /viewfinder /usr/local/bin/viewfinder
COPY Public ./Public
COPY config.json ./config.json
RUN mkdir -p /app/photos /app/movies && chown viewfinder:video /app/photos /app/movies
USER viewfinder:video
EXPOSE 8080 8554
# Inside the container listen on every interface; outside, publish the port as needed.
CMD ["viewfinder", "--host", "0.0.0.0", "--port", "8080"]
