//! The human author: the desk's editor sends each finished turn down a channel.

use super::{Author, AuthorFuture, AuthorInfo, DeltaSink, Outcome, Prompt, ProviderErrorKind};
use tokio::sync::mpsc;

/// The author end: awaits the next turn the editor sends.
pub struct HumanAuthor {
    rx: mpsc::Receiver<String>,
}

/// The editor end: send a finished turn (an empty turn from a person is a pass).
#[derive(Clone)]
pub struct HumanHandle {
    tx: mpsc::Sender<String>,
}

impl HumanHandle {
    /// Send a turn; false when the author end is gone.
    pub async fn send(&self, text: impl Into<String>) -> bool {
        self.tx.send(text.into()).await.is_ok()
    }

    /// Send without waiting (from the UI thread); false when full or gone.
    pub fn try_send(&self, text: impl Into<String>) -> bool {
        self.tx.try_send(text.into()).is_ok()
    }
}

/// A connected pair. `capacity` bounds turns queued ahead of the wake that reads them.
pub fn channel(capacity: usize) -> (HumanHandle, HumanAuthor) {
    let (tx, rx) = mpsc::channel(capacity.max(1));
    (HumanHandle { tx }, HumanAuthor { rx })
}

impl Author for HumanAuthor {
    fn info(&self) -> AuthorInfo {
        AuthorInfo {
            kind: "human",
            model: "human".into(),
            constrained: false,
            temperature: None,
        }
    }

    fn author<'a>(
        &'a mut self,
        _prompt: &'a Prompt,
        _deltas: Option<DeltaSink>,
    ) -> AuthorFuture<'a> {
        Box::pin(async move {
            match self.rx.recv().await {
                Some(text) => Outcome::Reply(text),
                None => Outcome::error(ProviderErrorKind::Closed, "the editor closed"),
            }
        })
    }
}
