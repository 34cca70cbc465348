# The bpconvert container image, built with docker or buildah from a release
# made by `make dist` (its linux-amd64 archives in dist/), with the same
# contents as the image `make dist` writes without a registry
# (dist/bpconvert-VERSION-linux-amd64.image.tar): Debian 12's C library,
# libgcc, CA certificates, time zones and /etc/services, no shell; both
# programs, the FFmpeg libraries, completions and manual pages in /usr/local;
# user bpconvert (10001:10001); entrypoint bpconvert.
#
#   make dist DIST_PLATFORMS=linux/amd64
#   docker build -t REGISTRY/bpconvert:VERSION .
#   docker push REGISTRY/bpconvert:VERSION
#
# Package versions are Debian 12's at build time, so the layers' bytes differ
# from the released image's whenever Debian has updated one of them.

# The run-time root filesystem (scripts/dist/image-base.sh: the packages
# unpacked, no maintainer scripts, /etc/passwd with the user).
FROM debian:bookworm-slim AS base
COPY scripts/dist/image-base.sh /src/scripts/dist/image-base.sh
RUN apt-get update -qq \
 && BPCONVERT_CACHE=/cache bash /src/scripts/dist/image-base.sh >/rootfs-path \
 && mv "$(cat /rootfs-path)" /rootfs \
 && chown 10001:10001 /rootfs/home/bpconvert

# The release archives, unpacked into what becomes /usr/local.
FROM debian:bookworm-slim AS app
COPY dist/bpconvert-v*-linux-amd64.tar.gz dist/bpconvert-lerobot-v*-linux-amd64.tar.gz /tmp/
RUN mkdir /app \
 && for a in /tmp/bpconvert-v*-linux-amd64.tar.gz /tmp/bpconvert-lerobot-v*-linux-amd64.tar.gz; do \
      tar -xzf "$a" -C /app --strip-components=1 --no-same-owner; \
    done

FROM scratch
COPY --from=base /rootfs/ /
COPY --from=app /app/ /usr/local/
USER 10001:10001
ENV PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/bpconvert
WORKDIR /home/bpconvert
ENTRYPOINT ["/usr/local/bin/bpconvert"]
CMD ["--help"]
