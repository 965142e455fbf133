#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs Bochs and saves its state where the guest asks: run.sh's driver
for --save and --restore (README.md, "Snapshots").

    snapshot.py [--save=DIR] --wall=SECONDS WORKDIR BOCHS ARGS...

Runs BOCHS ARGS... in WORKDIR, its console on a pseudo-terminal (the text
debugger prompts without a newline and flushes only for a terminal),
mirrored into WORKDIR/bochs.out. Bochs must run its debugger (-dbg) and
the rfb display with no_gui_console, and its debugger's rc file end with
the command that runs the guest, so that every stop comes here:

- the guest asks to stop (Bochs's iodebug port: 0x8A00, then 0x8AE0 to
  port 0x8A00): with --save, the state is saved into DIR/N at the N-th
  such stop, then "c". Bochs saves its state from one place only, its
  GUI's save/restore button (gui.cc's save_restore_handler; textconfig
  restores but does not save, the debugger has no command for it), so a
  VNC client presses that button on Bochs's rfb server while the guest is
  stopped: the click is queued, and taken at the first device tick
  (BX_IODEV_HANDLER_PERIOD, 1 ms of emulated time) after "c". The
  dialog's questions come through textconfig on the terminal: DIR/N, then
  "yes" to continuing. DIR/N/.saved marks a complete save.
- any other stop (the time breakpoint, a panic's prompt): "quit".

Exit status: Bochs's, 124 when SECONDS of wall-clock time ran out first
(Bochs is killed then), 2 bad usage, 3 a save failed.
"""
import os
import pty
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import tty

ME = "snapshot.py"
# gui/gui.h BX_HEADER_BAR_Y; the save/restore button is the second from
# the right (power, then save/restore, each 32 pixels wide: gui.cc), which
# gui.cc counts from the guest's screen width: the rfb frame's (720) while
# the guest is in text mode, as run.sh's kernels are. A click that misses
# leaves Bochs running without a dialog: status 3 when it ends.
HEADERBAR_Y = 32
SAVE_BUTTON_X_FROM_RIGHT = 32 + 16

# Bochs waits for an answer after each: nothing follows them.
PROMPT = re.compile(rb"<bochs:\d+> ")
FOLDER_PROMPT = b"Enter a path to an existing folder or press enter to cancel\n"
CONTINUE_PROMPT = re.compile(rb"Do you want to continue\? \[(yes|no)\] ")
SAVE_FAILED = b"Failed to save state"
GUEST_STOP = b"request return to dbg prompt received, 0x8AE0 command"


def fail(msg, status=2):
    print(f"{ME}: {msg}", file=sys.stderr)
    sys.exit(status)


class Deadline(Exception):
    pass


class SaveFailed(Exception):
    pass


class Stopped(Exception):
    pass


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("rfb server closed the connection")
        buf += chunk
    return buf


class Rfb:
    """The least of an RFB 3.3 client that presses Bochs's header-bar
    buttons. It stays connected until Bochs exits and discards what the
    server sends: Bochs does not ignore SIGPIPE, and its sim thread writes
    screen updates to the client."""

    def __init__(self, port, deadline):
        self.sock = socket.create_connection(("127.0.0.1", port),
                                             timeout=max(1, deadline - time.monotonic()))
        ver = recv_exact(self.sock, 12)
        if not ver.startswith(b"RFB 003."):
            raise ConnectionError(f"not an RFB 3.x server: {ver!r}")
        self.sock.sendall(b"RFB 003.003\n")
        (auth,) = struct.unpack(">I", recv_exact(self.sock, 4))
        if auth != 1:
            raise ConnectionError(f"rfb security type {auth}, not None (1)")
        self.sock.sendall(b"\x01")  # ClientInit: shared
        init = recv_exact(self.sock, 24)
        self.width, self.height = struct.unpack(">HH", init[:4])
        (name_len,) = struct.unpack(">I", init[20:24])
        recv_exact(self.sock, name_len)
        self.sock.settimeout(None)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        try:
            while self.sock.recv(65536):
                pass
        except OSError:
            pass

    def click_headerbar(self, x):
        y = HEADERBAR_Y // 2
        # PointerEvent: button 1 down, then up (gui/rfb.cc rfbMouseMove()).
        self.sock.sendall(struct.pack(">BBHH", 5, 1, x, y) +
                          struct.pack(">BBHH", 5, 0, x, y))

    def mark(self):
        # SetEncodings (raw only): the server logs it (rfbSetEncodings) once
        # it has read every message before it, the clicks included.
        self.sock.sendall(struct.pack(">BxHi", 2, 1, 0))

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def log_text(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def wait_for(pred, deadline, what):
    while not pred():
        if time.monotonic() > deadline:
            raise Deadline(what)
        time.sleep(0.02)


def main(argv):
    save = None
    wall = None
    args = list(argv)
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt.startswith("--save="):
            save = os.path.abspath(opt[len("--save="):])
        elif opt.startswith("--wall="):
            wall = int(opt[len("--wall="):])
        else:
            fail(f"unknown option {opt}")
    if wall is None or len(args) < 2:
        fail("usage: snapshot.py [--save=DIR] --wall=SECONDS WORKDIR BOCHS ARGS...")
    workdir, cmd = args[0], args[1:]
    deadline = time.monotonic() + wall

    def stop(signum, frame):
        # Once: the cleanup below must not be interrupted by a second one.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise Stopped(f"signal {signum}")
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log_path = os.path.join(workdir, "bochs.log")
    if save and os.path.exists(save) and os.listdir(save):
        fail(f"--save: {save} is not empty")

    master, slave = pty.openpty()
    tty.setraw(slave)  # no echo, no CR/LF translation
    proc = subprocess.Popen(cmd, cwd=workdir, stdin=slave, stdout=slave,
                            stderr=slave, start_new_session=True)
    os.close(slave)
    out = open(os.path.join(workdir, "bochs.out"), "wb")
    pending = b""  # output since the last answer
    state = "run"  # run, folder (waiting for the folder prompt), confirm
    stops = 0
    rfb = None
    status = None
    snap = None

    def send(text):
        os.write(master, text.encode())

    def press_save_button():
        nonlocal rfb
        if rfb is None:
            m = re.search(rb"listening for connections on port (\d+)",
                          log_text(log_path))
            if not m:
                raise ConnectionError("no rfb port in bochs.log")
            rfb = Rfb(int(m.group(1)), deadline)
        marks = log_text(log_path).count(b"rfbSetEncodings")
        rfb.click_headerbar(rfb.width - SAVE_BUTTON_X_FROM_RIGHT)
        rfb.mark()
        wait_for(lambda: log_text(log_path).count(b"rfbSetEncodings") > marks,
                 deadline, "the rfb server to take the click")

    try:
        while True:
            if time.monotonic() > deadline:
                raise Deadline("Bochs to finish")
            r, _, _ = select.select([master], [], [], 0.5)
            if not r:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every holder of the terminal has gone
                data = b""
            if not data:
                break
            out.write(data)
            out.flush()
            pending += data
            if SAVE_FAILED in pending:
                raise SaveFailed(f"Bochs failed to save its state into {snap}")
            if state == "folder" and FOLDER_PROMPT in pending:
                pending = b""
                send(snap + "\n")
                state = "confirm"
            elif state == "confirm" and CONTINUE_PROMPT.search(pending):
                pending = b""
                with open(os.path.join(snap, ".saved"), "w"):
                    pass
                send("yes\n")
                state = "run"
            elif state == "run" and PROMPT.search(pending):
                guest_stop = GUEST_STOP in pending
                pending = b""
                if guest_stop:
                    stops += 1
                    if save:
                        snap = os.path.join(save, str(stops))
                        os.makedirs(snap, exist_ok=True)
                        press_save_button()
                        state = "folder"
                    send("c\n")
                else:
                    send("quit\n")
    except Deadline as e:
        print(f"{ME}: wall-clock limit of {wall} s reached, waiting for {e}",
              file=sys.stderr)
        status = 124
    except (ConnectionError, OSError, SaveFailed) as e:
        print(f"{ME}: {e}", file=sys.stderr)
        status = 3
    except Stopped as e:
        print(f"{ME}: stopped by {e}", file=sys.stderr)
        status = 143
    finally:
        if status is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        rc = proc.wait()
        if rfb:
            rfb.close()
        out.close()
        os.close(master)
    if status is None:
        status = rc if rc >= 0 else 128 - rc
        if state != "run":
            print(f"{ME}: Bochs ended in the middle of saving {snap}",
                  file=sys.stderr)
            status = 3
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
