fn main() -> std::process::ExitCode {
    histopipe_cli::main::<histopipe::radon::Radon>()
}
