//! The command's errors and their exit statuses.

/// Why a command failed. Its exit status says whose fault it was (see [`CliError::exit_code`]).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad arguments or input the user can fix.
    #[error("{0}")]
    Usage(String),
    /// A queue operation failed.
    #[error("{0}")]
    Queue(#[from] crawlq::Error),
    /// Reading or writing a local file failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

impl CliError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> CliError {
        CliError::Io {
            context: context.into(),
            source,
        }
    }

    /// 2 for what the user can fix (usage, options, input), 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Queue(
                crawlq::Error::Config(_)
                | crawlq::Error::InvalidArgument(_)
                | crawlq::Error::InvalidItem { .. },
            ) => 2,
            CliError::Queue(_) | CliError::Io { .. } => 1,
        }
    }
}

/// Exit status of a command that finished but refused some of its items.
pub const EXIT_SOME_REFUSED: u8 = 3;

/// Exit status of a command some of whose ids name nothing (`dead show`, `dead requeue`).
pub const EXIT_NOT_FOUND: u8 = 4;
