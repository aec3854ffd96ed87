"""A throwaway CA and a server certificate for localhost / 127.0.0.1, made with openssl."""
import os
import subprocess


def make_certs(d):
    """Writes ca.crt, server.crt and server.key into directory `d` (world-readable)."""
    d = str(d)

    def run(*args):
        subprocess.run(args, check=True, capture_output=True, cwd=d)

    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=seedance-test-ca")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key",
        "-out", "server.csr", "-subj", "/CN=localhost")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "san.ext")
    for f in os.listdir(d):
        os.chmod(os.path.join(d, f), 0o644)


def make_client_cert(d, name="client"):
    """Writes NAME.crt and NAME.key into `d`, signed by the CA make_certs wrote there."""
    d = str(d)

    def run(*args):
        subprocess.run(args, check=True, capture_output=True, cwd=d)

    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
        "-out", f"{name}.csr", "-subj", f"/CN={name}")
    run("openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", f"{name}.crt", "-days", "2")
    for f in (f"{name}.crt", f"{name}.key"):
        os.chmod(os.path.join(d, f), 0o644)
