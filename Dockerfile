# nnapi-convert in a container:
#   docker build -t nnapi-convert .
#   docker run --rm --user "$(id -u):$(id -g)" -v "$PWD:/models" nnapi-convert \
#       model.pt --input 1x3x224x224 --nhwc --verify     # writes model.nnapi.pt beside it
#
# The build stage installs Debian's packages with tools/install-deps.sh, builds
# without the tests and makes the Debian package (cpack); the final image
# installs that package, whose Depends bring LibTorch's runtime packages.
FROM debian:bookworm AS build
WORKDIR /src
COPY . .
RUN tools/install-deps.sh --build-only \
 && cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNAPI_CONVERT_BUILD_TESTS=OFF \
 && cmake --build build -j"$(nproc)" \
 && cd build && cpack -G DEB

FROM debian:bookworm
COPY --from=build /src/build/nnapi-convert_*.deb /tmp/deb/
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends /tmp/deb/nnapi-convert_*.deb \
 && rm -rf /var/lib/apt/lists/* /tmp/deb
WORKDIR /models
ENTRYPOINT ["nnapi-convert"]
