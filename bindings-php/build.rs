// The ext-php-rs macros read `php82`-style cfgs from this crate (readonly classes need PHP
// 8.2), so emit them for the PHP found at build time, as ext-php-rs's own build script does.
fn main() -> anyhow::Result<()> {
    ext_php_rs_build::emit_check_cfg();
    ext_php_rs_build::emit_rerun_if_env_changed();
    let php = ext_php_rs_build::find_php()?;
    let info = ext_php_rs_build::PHPInfo::get(&php)?;
    let version: ext_php_rs_build::ApiVersion = info.zend_version()?.try_into()?;
    ext_php_rs_build::emit_php_cfg_flags(version);
    Ok(())
}
