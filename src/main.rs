fn main() {
    std::process::exit(kestrel_desk::cli::main());
}
