//! Messages over the service's Unix socket: an 8-byte header (`HP`, the kind, a zero, the body's
//! length), the body, and at most one file descriptor (a shared memory block) passed with the
//! header. A receiver reads a whole message or none: a body over [`BODY_MOST`], a bad magic or
//! kind, more than one descriptor, or a message cut short is an error, and the connection ends.

use std::io::{self, IoSlice, IoSliceMut, Read};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage,
    SendFlags,
};

use super::wire::{Kind, BODY_MOST};

const MAGIC: [u8; 2] = *b"HP";

/// Why no message came.
#[derive(Debug)]
pub(crate) enum RecvError {
    /// The other end closed the connection between messages.
    Closed,
    /// The connection failed, or timed out.
    Io(io::Error),
    /// What came is no message of the protocol.
    Bad(String),
}

impl std::fmt::Display for RecvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecvError::Closed => f.write_str("the connection closed"),
            RecvError::Io(e) => write!(f, "{e}"),
            RecvError::Bad(why) => f.write_str(why),
        }
    }
}

/// A message received.
pub(crate) struct Message {
    pub kind: Kind,
    pub body: Vec<u8>,
    pub fd: Option<OwnedFd>,
}

/// One end of a connection.
pub(crate) struct Channel {
    pub stream: UnixStream,
}

impl Channel {
    pub(crate) fn new(stream: UnixStream) -> Channel {
        Channel { stream }
    }

    /// Sends one message, with `fd` if given.
    pub(crate) fn send(&self, kind: Kind, body: &[u8], fd: Option<BorrowedFd<'_>>) -> io::Result<()> {
        if body.len() > BODY_MOST {
            return Err(io::Error::other(format!("a message of {} bytes, over {BODY_MOST}", body.len())));
        }
        let mut header = [0u8; 8];
        header[..2].copy_from_slice(&MAGIC);
        header[2] = kind as u8;
        header[4..].copy_from_slice(&(body.len() as u32).to_le_bytes());
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut ancillary = SendAncillaryBuffer::new(&mut space);
        let fds;
        if let Some(fd) = fd {
            fds = [fd];
            if !ancillary.push(SendAncillaryMessage::ScmRights(&fds)) {
                return Err(io::Error::other("no room for a descriptor"));
            }
        }
        let whole = header.len() + body.len();
        let sent = rustix::net::sendmsg(
            &self.stream,
            &[IoSlice::new(&header), IoSlice::new(body)],
            &mut ancillary,
            SendFlags::NOSIGNAL,
        )?;
        // The rest, if the socket took only part: the descriptor went with the first byte.
        if sent < whole {
            let rest: Vec<u8> = header.iter().chain(body).copied().skip(sent).collect();
            let mut at = 0;
            while at < rest.len() {
                at += rustix::net::send(&self.stream, &rest[at..], SendFlags::NOSIGNAL)?;
            }
        }
        Ok(())
    }

    /// Receives one message; `within`: how long the rest of a message may take once its first
    /// byte came (a half message does not hold a reader forever).
    pub(crate) fn recv(&self, within: Duration) -> Result<Message, RecvError> {
        let mut header = [0u8; 8];
        let mut got = 0;
        let mut fds: Vec<OwnedFd> = Vec::new();
        while got < header.len() {
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
            let mut ancillary = RecvAncillaryBuffer::new(&mut space);
            let received = rustix::net::recvmsg(
                &self.stream,
                &mut [IoSliceMut::new(&mut header[got..])],
                &mut ancillary,
                RecvFlags::CMSG_CLOEXEC,
            );
            let received = match received {
                Ok(r) => r,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(RecvError::Io(e.into())),
            };
            for message in ancillary.drain() {
                if let RecvAncillaryMessage::ScmRights(rights) = message {
                    fds.extend(rights);
                }
            }
            if received.flags.contains(rustix::net::ReturnFlags::CTRUNC) {
                return Err(RecvError::Bad("more descriptors than a message may pass".into()));
            }
            if received.bytes == 0 {
                return Err(if got == 0 && fds.is_empty() {
                    RecvError::Closed
                } else {
                    RecvError::Bad("the connection closed inside a message".into())
                });
            }
            if got == 0 {
                self.stream.set_read_timeout(Some(within)).map_err(RecvError::Io)?;
            }
            got += received.bytes;
        }
        let read = self.read_body(&header);
        // Between messages, a connection may wait as long as its other end likes.
        self.stream.set_read_timeout(None).map_err(RecvError::Io)?;
        let (kind, body) = read?;
        if fds.len() > 1 {
            return Err(RecvError::Bad(format!("{} descriptors with one message", fds.len())));
        }
        Ok(Message { kind, body, fd: fds.pop() })
    }

    fn read_body(&self, header: &[u8; 8]) -> Result<(Kind, Vec<u8>), RecvError> {
        if header[..2] != MAGIC || header[3] != 0 {
            return Err(RecvError::Bad("not a histopipe service message".into()));
        }
        let kind = Kind::of(header[2])
            .ok_or_else(|| RecvError::Bad(format!("unknown message kind {}", header[2])))?;
        let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
        if len > BODY_MOST {
            return Err(RecvError::Bad(format!("a message of {len} bytes, over {BODY_MOST}")));
        }
        let mut body = vec![0; len];
        (&self.stream).read_exact(&mut body).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => RecvError::Bad("the connection closed inside a message".into()),
            _ => RecvError::Io(e),
        })?;
        Ok((kind, body))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::service::shm::Block;

    #[test]
    fn messages_and_descriptors_arrive_whole() {
        let (a, b) = UnixStream::pair().unwrap();
        let (a, b) = (Channel::new(a), Channel::new(b));
        let block = Block::create(100).unwrap();
        a.send(Kind::Frame, b"abc", Some(block.fd())).unwrap();
        a.send(Kind::Stop, b"", None).unwrap();
        let m = b.recv(Duration::from_secs(5)).unwrap();
        assert_eq!((m.kind, &m.body[..], m.fd.is_some()), (Kind::Frame, &b"abc"[..], true));
        assert!(Block::receive(m.fd.unwrap()).is_ok());
        let m = b.recv(Duration::from_secs(5)).unwrap();
        assert_eq!((m.kind, m.body.len(), m.fd.is_none()), (Kind::Stop, 0, true));
        drop(a);
        assert!(matches!(b.recv(Duration::from_secs(5)), Err(RecvError::Closed)));
    }

    #[test]
    fn broken_messages_are_errors() {
        let cases: [&[u8]; 5] = [
            b"XX\x04\x00\x00\x00\x00\x00",
            b"HP\x63\x00\x00\x00\x00\x00",
            b"HP\x04\x01\x00\x00\x00\x00",
            b"HP\x04\x00\xff\xff\xff\x7f",
            b"HP\x04\x00\x10\x00\x00\x00abc",
        ];
        for bytes in cases {
            let (mut a, b) = UnixStream::pair().unwrap();
            a.write_all(bytes).unwrap();
            drop(a);
            let got = Channel::new(b).recv(Duration::from_secs(5));
            assert!(matches!(got, Err(RecvError::Bad(_))), "{bytes:?}");
        }
    }

    #[test]
    fn half_a_message_times_out() {
        let (mut a, b) = UnixStream::pair().unwrap();
        a.write_all(b"HP\x04\x00\x10\x00\x00\x00ab").unwrap();
        let got = Channel::new(b).recv(Duration::from_millis(50));
        assert!(matches!(got, Err(RecvError::Io(_))));
        drop(a);
    }
}
