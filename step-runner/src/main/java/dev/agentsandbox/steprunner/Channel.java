package dev.agentsandbox.steprunner;

/**
 * One open operation on the runner (a step, a request, a transfer), fed the frames of its id by the
 * client's one reader thread. It stays registered until its last frame, so that a frame of the
 * runner's for an id the host does not know is always a violation.
 */
interface Channel {
  /**
   * A frame of this channel's.
   *
   * @return whether it was the channel's last
   * @throws ProtocolViolationException when the frame is not one this channel expects now
   */
  boolean onFrame(Frame frame);

  /** The session ended, or failed, before this channel's last frame. */
  void onEnd(String why);
}
