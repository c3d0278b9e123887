//! `admin user`: the owners of services; ban and unban.

use super::Public;
use crate::cli::print;
use clap::Subcommand;
use domain::UserId;
use services::Services;

#[derive(Subcommand)]
pub(crate) enum UserCmd {
    /// Create a user (an owner of services).
    Create {
        /// The user's name.
        #[arg(long)]
        name: String,
    },
    /// Ban or unban a user: a banned user's services answer USER_BANNED.
    Update {
        /// The user's id.
        #[arg(long)]
        user: UserId,
        /// true or false.
        #[arg(long, action = clap::ArgAction::Set)]
        banned: bool,
    },
}

pub(super) async fn run(svc: &Services, cmd: UserCmd) -> anyhow::Result<()> {
    let u = match cmd {
        UserCmd::Create { name } => svc.admin().create_user(&name).await.public()?,
        UserCmd::Update { user, banned } => {
            svc.admin().set_user_banned(&user, banned).await.public()?
        }
    };
    print(api::views::user(&u));
    Ok(())
}
