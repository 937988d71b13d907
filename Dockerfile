# Builds the scrollback binary and runs it on a slim image.
FROM swift:6.2-noble AS build
WORKDIR /src
# Everything the package needs to plan a build: the test targets are declared
# in Package.swift, and the EmbedResources plugin reads sql/, Web/ and
# openapi.yaml. scripts/check-docker-context (run by CI) plans this build in
# exactly these files.
COPY Package.swift ./
COPY Plugins ./Plugins
COPY Sources ./Sources
COPY Tests ./Tests
COPY sql ./sql
COPY Web ./Web
COPY openapi.yaml ./
RUN swift build -c release --product scrollback \
    && cp "$(swift build -c release --show-bin-path)/scrollback" /usr/local/bin/scrollback

FROM swift:6.2-noble-slim
RUN useradd --system --create-home scrollback
COPY --from=build /usr/local/bin/scrollback /usr/local/bin/scrollback
USER scrollback
WORKDIR /home/scrollback
ENV HOST=0.0.0.0 PORT=8080
EXPOSE 8080
ENTRYPOINT ["scrollback"]
CMD ["serve"]
