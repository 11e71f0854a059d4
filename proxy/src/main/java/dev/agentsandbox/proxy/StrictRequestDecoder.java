package dev.agentsandbox.proxy;

import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpRequestDecoder;

/**
 * An HTTP request decoder that treats a message carrying both {@code Content-Length} and {@code
 * Transfer-Encoding} as malformed instead of silently dropping the length (Netty's default, which
 * RFC 9112 allows a server but not an intermediary that wants to rule out request smuggling).
 */
final class StrictRequestDecoder extends HttpRequestDecoder {
  StrictRequestDecoder(int maxHeaderBytes) {
    super(
        new HttpDecoderConfig()
            .setMaxInitialLineLength(8192)
            .setMaxHeaderSize(maxHeaderBytes)
            .setMaxChunkSize(8192)
            .setAllowDuplicateContentLengths(false)
            .setStrictLineParsing(true)
            .setValidateHeaders(true));
  }

  @Override
  protected void handleTransferEncodingChunkedWithContentLength(HttpMessage message) {
    throw new IllegalArgumentException(
        "both Content-Length and Transfer-Encoding are present (ambiguous framing)");
  }
}
