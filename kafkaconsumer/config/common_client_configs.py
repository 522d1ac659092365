"""The keys every client shares: connection, metadata, metrics, TLS and SASL.

Java spreads them over ``CommonClientConfigs``, ``SslConfigs`` and ``SaslConfigs``; a few
defaults differ by client (``connections.max.idle.ms`` of the admin client,
``receive.buffer.bytes`` of the producer), so the table is built for one client at a time.
"""

from __future__ import annotations

from kafkaconsumer.config.config_def import ConfigKey, H, L, M, T, _k, _ListOf, _OneOf, _Range
from kafkaconsumer.config.validators import (
    JMX_REPORTER,
    OAUTH_DEFAULT_JWT_RETRIEVER,
    OAUTH_DEFAULT_JWT_VALIDATOR,
    OAUTH_JWT_RETRIEVERS,
    OAUTH_JWT_VALIDATORS,
    OAUTH_LOGIN_CALLBACK_HANDLERS,
    _bootstrap,
    _JavaClassIn,
    _metric_reporter,
    _ssl_context,
    _str_mapping,
    _token_provider,
)

_SECURITY_PROTOCOLS = _OneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_MECHANISMS = _OneOf("GSSAPI", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
_TLS_PROTOCOLS = ("TLSv1.3", "TLSv1.2", "TLSv1.1", "TLSv1", "TLS")
_STORE_TYPES = _OneOf("JKS", "PKCS12", "PEM")
_NON_NEGATIVE = _Range(0)


# Why keys of several Java mechanisms refuse any value but their default (ConfigKey.unsupported).
_NO_JAVA_PROVIDERS = (
    "Java security providers cannot be loaded from Python; TLS here is OpenSSL through "
    "the ssl module: for other TLS settings pass a configured ssl.SSLContext as "
    "ssl.context"
)
_NO_GSSAPI = (
    "GSSAPI (Kerberos) is not supported by this client; use sasl.mechanism PLAIN, "
    "SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
)
_NO_TOKEN_VALIDATION = (
    "a setting of the broker's token validation; the client sends its token and the broker "
    "validates it"
)


def common_keys(client: str) -> list[ConfigKey]:
    """Keys every client shares: connection, metadata, metrics, TLS and SASL."""
    idle_default = 300000 if client == "admin" else 540000
    return [
        _k(
            "bootstrap.servers",
            T.LIST,
            (),
            "Comma-separated host:port pairs of brokers used to "
            "discover the cluster. Any subset of the brokers will do; list more than one so that "
            "start-up survives one being down.",
            H,
            _bootstrap,
        ),
        _k(
            "client.dns.lookup",
            T.STRING,
            "use_all_dns_ips",
            "How host names are resolved: "
            "use_all_dns_ips tries every address of a name in turn; "
            "resolve_canonical_bootstrap_servers_only expands each bootstrap name to its "
            "canonical names first.",
            M,
            _OneOf("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only"),
        ),
        _k(
            "bootstrap.resolve.timeout.ms",
            T.LONG,
            120000,
            "How long Java (KIP-909) keeps retrying to resolve the bootstrap host names before "
            "failing.",
            H,
            _NON_NEGATIVE,
            unsupported=(
                "the bootstrap names are resolved once, when the client is built (as Java did "
                "before KIP-909): a name that does not resolve is skipped and construction fails "
                "when none resolves, so there is no retry window to size"
            ),
        ),
        _k(
            "client.id",
            T.STRING,
            "",
            "A name for this client sent with every request, so broker "
            "logs and quotas can tell clients apart. Generated when empty.",
            L,
        ),
        _k(
            "client.rack",
            T.STRING,
            "",
            "The rack (or availability zone) this client runs in; "
            "lets a broker with replica.selector.class serve fetches from a nearby replica.",
            L,
        ),
        _k(
            "metadata.max.age.ms",
            T.LONG,
            300000,
            "Refresh cluster metadata at least this often, "
            "even without errors, to discover new brokers and partitions.",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "send.buffer.bytes",
            T.INT,
            131072,
            "TCP send buffer size (SO_SNDBUF); -1 keeps the operating-system default.",
            M,
            _Range(-1),
        ),
        _k(
            "receive.buffer.bytes",
            T.INT,
            # The consumer departs from Java's 65536: a fixed 64 KiB buffer turns off the
            # kernel's autotuning, so an 8 MiB fetch response arrives in ~65 reads and the
            # broker cannot send ahead while records are decoded (docs/fetching.md).
            32768 if client == "producer" else -1,
            "TCP receive buffer size (SO_RCVBUF); -1 keeps the operating-system default "
            "(the consumer's default, which lets Linux grow the buffer; Java's is 65536).",
            M,
            _Range(-1),
        ),
        _k(
            "reconnect.backoff.ms",
            T.LONG,
            50,
            "Initial wait before reconnecting to a broker "
            "after a failed connection; doubles per failure up to reconnect.backoff.max.ms. "
            "Setting it alone (without the max) disables the doubling, as in Java.",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "reconnect.backoff.max.ms",
            T.LONG,
            1000,
            "Upper bound of the reconnect backoff (20% random jitter is applied).",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "retry.backoff.ms",
            T.LONG,
            100,
            "Initial wait before retrying a failed request; "
            "doubles per failure up to retry.backoff.max.ms.",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "retry.backoff.max.ms",
            T.LONG,
            1000,
            "Upper bound of the retry backoff (20% random jitter is applied).",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "socket.connection.setup.timeout.ms",
            T.LONG,
            10000,
            "How long to wait for a TCP "
            "connection (and TLS/SASL set-up) before abandoning it; grows per consecutive "
            "failure up to the max.",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "socket.connection.setup.timeout.max.ms",
            T.LONG,
            30000,
            "Upper bound of the connection set-up timeout.",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "connections.max.idle.ms",
            T.LONG,
            idle_default,
            "Close a broker connection that has been idle this long.",
            M,
        ),
        _k(
            "request.timeout.ms",
            T.INT,
            30000,
            "How long to wait for the response to one "
            "request before failing it (and retrying where that is safe).",
            M,
            _NON_NEGATIVE,
        ),
        _k(
            "metadata.recovery.strategy",
            T.STRING,
            "rebootstrap",
            "What to do when no broker the client knows is available: none keeps trying "
            "them; rebootstrap forgets the cluster metadata and starts again from "
            "bootstrap.servers. A rebootstrap happens when every known broker is disconnected "
            "and backing off at once, when no metadata could be obtained for "
            "metadata.recovery.rebootstrap.trigger.ms, and when a broker answers "
            "REBOOTSTRAP_REQUIRED.",
            L,
            _OneOf("none", "rebootstrap"),
        ),
        _k(
            "metadata.recovery.rebootstrap.trigger.ms",
            T.LONG,
            300000,
            "With metadata.recovery.strategy=rebootstrap: when a metadata refresh has been "
            "due for this long without a Metadata response from any broker, the client "
            "closes its broker connections and starts again from bootstrap.servers.",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "metadata.cluster.check.enable",
            T.BOOLEAN,
            True,
            "With metadata.recovery.strategy=rebootstrap: send the cluster id and node id the "
            "client means to reach in the ApiVersions request of every connection to a known "
            "broker (ApiVersions v5: Apache Kafka 4.4 and newer; not sent where the brokers "
            "advertise no v5), so that a broker of another cluster, or another node behind "
            "the same address, answers REBOOTSTRAP_REQUIRED and the client rebootstraps. "
            "Ignored with metadata.recovery.strategy=none.",
            L,
        ),
        _k(
            "config.providers",
            T.LIST,
            (),
            "Names of configuration providers whose ${name:path:key} placeholders are "
            "replaced in the other values at construction (config.providers.<name>.class: "
            "Java's FileConfigProvider, DirectoryConfigProvider or EnvVarConfigProvider; "
            "config.providers.<name>.param.<option>: its allowed.paths or allowlist.pattern).",
            L,
        ),
        _k(
            "metrics.sample.window.ms",
            T.LONG,
            30000,
            "Length of one metrics sample window.",
            L,
            _NON_NEGATIVE,
        ),
        _k(
            "metrics.num.samples",
            T.INT,
            2,
            "Number of sample windows a windowed metric (rate, avg, max) spans.",
            L,
            _Range(1),
        ),
        _k(
            "metrics.recording.level",
            T.STRING,
            "INFO",
            "Highest recording level of the sensors that record: INFO, DEBUG or TRACE. A sensor "
            "of a higher level keeps its metrics but records nothing, as in Java. The consumer's "
            "own sensors are all INFO, as in Java's consumer; the level decides for sensors made "
            "at DEBUG or TRACE (Metrics.sensor(name, recording_level)) in a registry built with "
            "Metrics.from_config.",
            L,
            _OneOf("INFO", "DEBUG", "TRACE"),
        ),
        _k(
            "metric.reporters",
            T.LIST,
            (JMX_REPORTER,),
            "Objects (or import paths of classes) told about every metric. The Java default, "
            "JmxReporter, stands for none (there is no JMX in Python); other Java class names are "
            "refused.",
            L,
            _ListOf(_metric_reporter),
        ),
        _k(
            "auto.include.jmx.reporter",
            T.BOOLEAN,
            True,
            "Java 3.x switch adding the JMX reporter to metric.reporters.",
            L,
            unsupported=(
                "there is no JMX in Python, so there is no JMX reporter to include; false (leave "
                "it out) is what this client does anyway. Python reporters go in metric.reporters"
            ),
            honoured=(False,),
        ),
        _k(
            "enable.metrics.push",
            T.BOOLEAN,
            True,
            "Push client metrics to the broker when it has a matching subscription (KIP-714): "
            "the client asks a broker which of its metrics to push and how often, then pushes "
            "them OTLP-encoded; false never asks and never pushes.",
            L,
            # The producer and the admin client keep no metrics registry, so they have nothing
            # to push.
            unsupported=(
                ""
                if client == "consumer"
                else (
                    f"the {client} client keeps no metrics, so it never pushes any (KIP-714); "
                    "false (never push) is what it does anyway"
                )
            ),
            honoured=() if client == "consumer" else (False,),
        ),
        _k(
            "security.protocol",
            T.STRING,
            "PLAINTEXT",
            "How to talk to brokers: PLAINTEXT, SSL (TLS), SASL_PLAINTEXT or SASL_SSL.",
            M,
            _SECURITY_PROTOCOLS,
        ),
        _k(
            "security.providers",
            T.STRING,
            None,
            "Java security provider classes.",
            L,
            unsupported=_NO_JAVA_PROVIDERS,
        ),
        # ----- TLS
        _k(
            "ssl.protocol",
            T.STRING,
            "TLSv1.3",
            "The TLS protocol of Java's SSLContext, which bounds the newest TLS version a "
            "connection may use: TLSv1.2 keeps connections off TLSv1.3 even when "
            "ssl.enabled.protocols lists it; TLSv1.3 and TLS add no bound. Refused when it "
            "leaves none of ssl.enabled.protocols.",
            M,
            _OneOf(*_TLS_PROTOCOLS),
        ),
        _k(
            "ssl.provider",
            T.STRING,
            None,
            "Java security provider for TLS.",
            M,
            unsupported=_NO_JAVA_PROVIDERS,
        ),
        _k(
            "ssl.cipher.suites",
            T.LIST,
            None,
            "Cipher suites to allow (OpenSSL or IANA names); "
            "all the TLS library enables by default when unset.",
            L,
        ),
        _k(
            "ssl.enabled.protocols",
            T.LIST,
            ("TLSv1.2", "TLSv1.3"),
            "TLS protocol versions allowed on connections.",
            M,
            _ListOf(_OneOf(*_TLS_PROTOCOLS)),
        ),
        _k(
            "ssl.keystore.type",
            T.STRING,
            "JKS",
            "Format of the client key store: PEM is the only one readable here (the Java default "
            "JKS is accepted for files that are PEM). PKCS12 is refused; JKS with "
            "ssl.keystore.location too.",
            M,
            _STORE_TYPES,
            unsupported=(
                "only PEM key stores are readable here: convert the store to PEM (openssl pkcs12 "
                "converts a PKCS12 file; keytool -importkeystore turns JKS into PKCS12 first) and "
                "set ssl.keystore.type=PEM"
            ),
            honoured=("PEM",),
        ),
        _k(
            "ssl.keystore.location",
            T.STRING,
            None,
            "Path of a PEM file with the client certificate chain and private key, for mutual TLS.",
            H,
        ),
        _k(
            "ssl.keystore.password",
            T.PASSWORD,
            None,
            "Password of a JKS or PKCS12 key store file; PEM key stores have none.",
            H,
            unsupported=(
                "a PEM key store has no store password (Java refuses one with PEM too); put the "
                "private key's password in ssl.key.password"
            ),
        ),
        _k(
            "ssl.key.password",
            T.PASSWORD,
            None,
            "Password of the private key (in ssl.keystore.location or ssl.keystore.key).",
            H,
        ),
        _k("ssl.keystore.key", T.PASSWORD, None, "The client private key as PEM text (PKCS#8).", H),
        # Java types the two certificate keys as passwords; certificates are public, and a
        # plain string is what the TLS layer loads, so they are strings here.
        _k(
            "ssl.keystore.certificate.chain",
            T.STRING,
            None,
            "The client certificate chain as PEM text.",
            H,
        ),
        _k(
            "ssl.truststore.certificates", T.STRING, None, "Trusted CA certificates as PEM text.", H
        ),
        _k(
            "ssl.truststore.type",
            T.STRING,
            "JKS",
            "Format of the trust store: PEM is the only one readable here (the Java default JKS "
            "is accepted for files that are PEM). PKCS12 is refused; JKS with "
            "ssl.truststore.location too.",
            M,
            _STORE_TYPES,
            unsupported=(
                "only PEM trust stores are readable here: convert the store to a PEM file of CA "
                "certificates and set ssl.truststore.type=PEM"
            ),
            honoured=("PEM",),
        ),
        _k(
            "ssl.truststore.location",
            T.STRING,
            None,
            "Path of a PEM file of trusted CA "
            "certificates; the system trust store is used when unset.",
            H,
        ),
        _k(
            "ssl.truststore.password",
            T.PASSWORD,
            None,
            "Password of a JKS or PKCS12 trust store file; PEM trust stores have none.",
            H,
            unsupported=(
                "a PEM trust store (a file of CA certificates) has no password; leave it unset"
            ),
        ),
        _k(
            "ssl.keymanager.algorithm",
            T.STRING,
            "SunX509",
            "Java key manager algorithm.",
            L,
            unsupported=(
                "Java key managers do not exist in Python: OpenSSL presents the certificate of "
                "ssl.keystore.location; for anything else pass an ssl.SSLContext as ssl.context"
            ),
        ),
        _k(
            "ssl.trustmanager.algorithm",
            T.STRING,
            "PKIX",
            "Java trust manager algorithm.",
            L,
            unsupported=(
                "Java trust managers do not exist in Python: OpenSSL verifies the broker's chain "
                "against the trust store (PKIX); for other checks pass an ssl.SSLContext as "
                "ssl.context"
            ),
        ),
        _k(
            "ssl.endpoint.identification.algorithm",
            T.STRING,
            "https",
            "'https' checks that the "
            "broker certificate matches its host name; an empty string turns the check off.",
            L,
            _OneOf("https", "", nullable=True),
        ),
        _k(
            "ssl.secure.random.implementation",
            T.STRING,
            None,
            "Java SecureRandom implementation.",
            L,
            unsupported="OpenSSL uses its own random generator, which cannot be chosen from Python",
        ),
        _k(
            "ssl.engine.factory.class",
            T.CLASS,
            None,
            "Java SSLEngine factory.",
            L,
            unsupported=(
                "Java SSLEngine factories cannot run in Python; pass a configured ssl.SSLContext "
                "as ssl.context"
            ),
        ),
        _k(
            "ssl.ca.location",
            T.STRING,
            None,
            "librdkafka name: path of a PEM file of trusted "
            "CA certificates (same as ssl.truststore.location with type PEM).",
            L,
            python_only=True,
        ),
        _k(
            "ssl.certificate.location",
            T.STRING,
            None,
            "librdkafka name: path of the client certificate (chain) PEM file.",
            L,
            python_only=True,
        ),
        _k(
            "ssl.key.location",
            T.STRING,
            None,
            "librdkafka name: path of the client private key "
            "PEM file (its password in ssl.key.password).",
            L,
            python_only=True,
        ),
        _k(
            "ssl.context",
            T.OBJECT,
            None,
            "A ready ssl.SSLContext to use for TLS connections; "
            "when set, the other ssl.* keys are ignored.",
            M,
            _ssl_context,
            python_only=True,
        ),
        # ----- SASL
        _k(
            "sasl.mechanism",
            T.STRING,
            "GSSAPI",
            "SASL mechanism: PLAIN, SCRAM-SHA-256, "
            "SCRAM-SHA-512 or OAUTHBEARER. GSSAPI (Kerberos, the Java default) is not "
            "supported and is refused when SASL is used.",
            M,
            _SASL_MECHANISMS,
        ),
        _k(
            "sasl.jaas.config",
            T.PASSWORD,
            None,
            "A JAAS login entry as in Java, e.g. "
            "'org.apache.kafka.common.security.plain.PlainLoginModule required "
            'username="u" password="p";\'; its username and password are used for PLAIN '
            "and SCRAM.",
            M,
        ),
        _k(
            "sasl.username",
            T.STRING,
            None,
            "User name for PLAIN and SCRAM (instead of sasl.jaas.config).",
            M,
            python_only=True,
        ),
        _k(
            "sasl.password",
            T.PASSWORD,
            None,
            "Password for PLAIN and SCRAM (instead of sasl.jaas.config).",
            M,
            python_only=True,
        ),
        _k(
            "sasl.oauthbearer.token.provider",
            T.OBJECT,
            None,
            "For OAUTHBEARER: a callable "
            "returning the access token (a str, or an object with a 'token' attribute), or an "
            "object with a token() method.",
            M,
            _token_provider,
            python_only=True,
        ),
        _k(
            "sasl.oauthbearer.token.callback",
            T.OBJECT,
            None,
            "Another name for "
            "sasl.oauthbearer.token.provider (the network layer reads this one; setting either "
            "fills both).",
            L,
            _token_provider,
            python_only=True,
        ),
        _k(
            "sasl.oauthbearer.extensions",
            T.OBJECT,
            None,
            "For OAUTHBEARER: a mapping of SASL extensions (KIP-342) sent with the token.",
            L,
            _str_mapping,
            python_only=True,
        ),
        _k(
            "sasl.scram.tokenauth",
            T.BOOLEAN,
            False,
            "For SCRAM: authenticate with a delegation token (sends the tokenauth=true extension).",
            L,
            python_only=True,
        ),
        _k(
            "sasl.client.callback.handler.class",
            T.CLASS,
            None,
            "Java SASL client callback handler.",
            M,
            unsupported=(
                "Java callback handlers cannot run in Python; PLAIN and SCRAM credentials come "
                "from sasl.username and sasl.password (or sasl.jaas.config), OAUTHBEARER tokens "
                "from sasl.oauthbearer.token.provider"
            ),
        ),
        _k(
            "sasl.login.callback.handler.class",
            T.CLASS,
            None,
            "OAUTHBEARER: Java's "
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler makes "
            "the client fetch its tokens from sasl.oauthbearer.token.endpoint.url "
            "(docs/network.md, OAuth).",
            M,
            _JavaClassIn(
                OAUTH_LOGIN_CALLBACK_HANDLERS,
                "only Java's OAuthBearerLoginCallbackHandler is built in; for any other "
                "source of tokens set sasl.oauthbearer.token.provider to a callable that "
                "returns the token",
            ),
        ),
        _k(
            "sasl.login.class",
            T.CLASS,
            None,
            "Java SASL login class.",
            M,
            unsupported=(
                "Java login classes cannot run in Python; set sasl.oauthbearer.token.provider "
                "(OAUTHBEARER) or sasl.username and sasl.password (PLAIN, SCRAM)"
            ),
        ),
        _k(
            "sasl.kerberos.service.name",
            T.STRING,
            None,
            "Kerberos service name of the brokers (GSSAPI).",
            M,
            unsupported=_NO_GSSAPI,
        ),
        _k(
            "sasl.kerberos.kinit.cmd",
            T.STRING,
            "/usr/bin/kinit",
            "Kerberos kinit command (GSSAPI).",
            L,
            unsupported=_NO_GSSAPI,
        ),
        _k(
            "sasl.kerberos.ticket.renew.window.factor",
            T.DOUBLE,
            0.8,
            "Kerberos ticket renewal point (GSSAPI).",
            L,
            unsupported=_NO_GSSAPI,
        ),
        _k(
            "sasl.kerberos.ticket.renew.jitter",
            T.DOUBLE,
            0.05,
            "Kerberos ticket renewal jitter (GSSAPI).",
            L,
            unsupported=_NO_GSSAPI,
        ),
        _k(
            "sasl.kerberos.min.time.before.relogin",
            T.LONG,
            60000,
            "Kerberos relogin interval (GSSAPI).",
            L,
            unsupported=_NO_GSSAPI,
        ),
        _k(
            "sasl.login.refresh.window.factor",
            T.DOUBLE,
            0.8,
            "Fraction of a credential's lifetime after which it is refreshed (OAUTHBEARER).",
            L,
            _Range(0.5, 1.0),
        ),
        _k(
            "sasl.login.refresh.window.jitter",
            T.DOUBLE,
            0.05,
            "OAUTHBEARER: a random share of the token's lifetime, up to this, added to "
            "sasl.login.refresh.window.factor when the refresh is scheduled, so that clients "
            "started together do not all refresh at once.",
            L,
            _Range(0.0, 0.25),
        ),
        _k(
            "sasl.login.refresh.min.period.seconds",
            T.SHORT,
            60,
            "OAUTHBEARER: the refresh is not scheduled sooner than this after a token was "
            "obtained.",
            L,
            _Range(0, 900),
        ),
        _k(
            "sasl.login.refresh.buffer.seconds",
            T.SHORT,
            300,
            "OAUTHBEARER: the refresh is scheduled at least this long before the token expires. "
            "When the token lives less than this plus sasl.login.refresh.min.period.seconds, it "
            "is refreshed half way through its remaining life.",
            L,
            _Range(0, 3600),
        ),
        _k(
            "sasl.login.connect.timeout.ms",
            T.INT,
            None,
            "OAUTHBEARER: connect timeout of each token request to "
            "sasl.oauthbearer.token.endpoint.url; unset, request.timeout.ms bounds it.",
            L,
            _Range(0),
        ),
        _k(
            "sasl.login.read.timeout.ms",
            T.INT,
            None,
            "OAUTHBEARER: read timeout of each token request to "
            "sasl.oauthbearer.token.endpoint.url; unset, request.timeout.ms bounds it.",
            L,
            _Range(0),
        ),
        _k(
            "sasl.login.retry.backoff.max.ms",
            T.LONG,
            10000,
            "OAUTHBEARER: upper bound of the wait before the token provider is called again "
            "after it failed.",
            L,
        ),
        _k(
            "sasl.login.retry.backoff.ms",
            T.LONG,
            100,
            "OAUTHBEARER: wait before the token provider is called again after it failed; "
            "doubles per failure up to sasl.login.retry.backoff.max.ms.",
            L,
        ),
        _k(
            "sasl.oauthbearer.scope.claim.name",
            T.STRING,
            "scope",
            "OAUTHBEARER: the claim of a fetched token holding its scope; when present it "
            "must be a string or a list of strings.",
            L,
        ),
        _k(
            "sasl.oauthbearer.sub.claim.name",
            T.STRING,
            "sub",
            "OAUTHBEARER: the claim of a fetched token naming its principal; a token "
            "without it is refused before it is sent.",
            L,
        ),
        _k(
            "sasl.oauthbearer.token.endpoint.url",
            T.STRING,
            None,
            "OAUTHBEARER with the OAuthBearerLoginCallbackHandler: the identity provider's "
            "token endpoint (http or https), or a file: URL of a file holding the token. The "
            "URL must be listed in the environment variable "
            "KAFKACONSUMER_SASL_OAUTHBEARER_ALLOWED_URLS.",
            M,
        ),
        _k(
            "sasl.oauthbearer.client.credentials.client.id",
            T.STRING,
            None,
            "OAUTHBEARER client_credentials grant: the client id (else the JAAS option clientId).",
            M,
        ),
        _k(
            "sasl.oauthbearer.client.credentials.client.secret",
            T.PASSWORD,
            None,
            "OAUTHBEARER client_credentials grant: the client secret (else the JAAS option "
            "clientSecret).",
            M,
        ),
        _k(
            "sasl.oauthbearer.scope",
            T.STRING,
            None,
            "OAUTHBEARER: the scope asked for in token requests (else the JAAS option scope).",
            M,
        ),
        _k(
            "sasl.oauthbearer.header.urlencode",
            T.BOOLEAN,
            False,
            "OAUTHBEARER client_credentials grant: URL-encode the client id, secret and scope "
            "before they are sent (RFC 6749 2.3.1).",
            L,
        ),
        _k(
            "sasl.oauthbearer.jwt.retriever.class",
            T.CLASS,
            OAUTH_DEFAULT_JWT_RETRIEVER,
            "OAUTHBEARER: how tokens are fetched: Java's DefaultJwtRetriever (a file: URL is "
            "read, else the client_credentials grant), ClientCredentialsJwtRetriever, "
            "FileJwtRetriever or JwtBearerJwtRetriever (the jwt-bearer grant, KIP-1139).",
            M,
            _JavaClassIn(
                (OAUTH_DEFAULT_JWT_RETRIEVER, *OAUTH_JWT_RETRIEVERS),
                "only Java's own retrievers are built in; for any other source of tokens set "
                "sasl.oauthbearer.token.provider",
            ),
        ),
        _k(
            "sasl.oauthbearer.jwt.validator.class",
            T.CLASS,
            OAUTH_DEFAULT_JWT_VALIDATOR,
            "OAUTHBEARER: the check a fetched token passes before it is sent (Java's "
            "DefaultJwtValidator: a JWT with exp and the subject claim).",
            L,
            unsupported="only Java's default client-side check is built in",
            honoured=OAUTH_JWT_VALIDATORS,
        ),
        _k(
            "sasl.oauthbearer.assertion.algorithm",
            T.STRING,
            "RS256",
            "OAUTHBEARER jwt-bearer grant: the algorithm the assertion is signed with.",
            L,
            _OneOf("RS256", "ES256"),
        ),
        _k(
            "sasl.oauthbearer.assertion.claim.aud",
            T.STRING,
            None,
            "OAUTHBEARER jwt-bearer grant: the aud claim of a signed assertion.",
            L,
        ),
        _k(
            "sasl.oauthbearer.assertion.claim.exp.seconds",
            T.INT,
            300,
            "OAUTHBEARER jwt-bearer grant: a signed assertion expires this long after it was made.",
            L,
            _Range(0, 86400),
        ),
        _k(
            "sasl.oauthbearer.assertion.claim.iss",
            T.STRING,
            None,
            "OAUTHBEARER jwt-bearer grant: the iss claim of a signed assertion.",
            L,
        ),
        _k(
            "sasl.oauthbearer.assertion.claim.jti.include",
            T.BOOLEAN,
            False,
            "OAUTHBEARER jwt-bearer grant: give each signed assertion a random jti claim.",
            L,
        ),
        _k(
            "sasl.oauthbearer.assertion.claim.nbf.seconds",
            T.INT,
            60,
            "OAUTHBEARER jwt-bearer grant: a signed assertion is valid from this long before "
            "it was made.",
            L,
            _Range(0, 3600),
        ),
        _k(
            "sasl.oauthbearer.assertion.claim.sub",
            T.STRING,
            None,
            "OAUTHBEARER jwt-bearer grant: the sub claim of a signed assertion.",
            L,
        ),
        _k(
            "sasl.oauthbearer.assertion.file",
            T.STRING,
            None,
            "OAUTHBEARER jwt-bearer grant: a file holding a ready assertion, read for every "
            "request (instead of signing one).",
            L,
        ),
        _k(
            "sasl.oauthbearer.assertion.private.key.file",
            T.STRING,
            None,
            "OAUTHBEARER jwt-bearer grant: the PEM private key that signs the assertion "
            "(needs the oauth extra).",
            L,
        ),
        _k(
            "sasl.oauthbearer.assertion.private.key.passphrase",
            T.PASSWORD,
            None,
            "OAUTHBEARER jwt-bearer grant: the passphrase of an encrypted private key.",
            L,
        ),
        _k(
            "sasl.oauthbearer.assertion.template.file",
            T.STRING,
            None,
            "OAUTHBEARER jwt-bearer grant: a JSON file with 'header' and 'payload' objects "
            "merged into every signed assertion (the claim keys win).",
            L,
        ),
        _k(
            "sasl.oauthbearer.jwks.endpoint.url",
            T.STRING,
            None,
            "JWKS endpoint for validating tokens.",
            M,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
        _k(
            "sasl.oauthbearer.jwks.endpoint.refresh.ms",
            T.LONG,
            3600000,
            "JWKS refresh interval for validating tokens.",
            L,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
        _k(
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
            T.LONG,
            10000,
            "JWKS retry backoff maximum.",
            L,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
        _k(
            "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
            T.LONG,
            100,
            "JWKS retry backoff.",
            L,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
        _k(
            "sasl.oauthbearer.clock.skew.seconds",
            T.INT,
            30,
            "Allowed clock skew when validating tokens.",
            L,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
        _k(
            "sasl.oauthbearer.expected.audience",
            T.LIST,
            None,
            "Audiences a validated token must name.",
            L,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
        _k(
            "sasl.oauthbearer.expected.issuer",
            T.STRING,
            None,
            "Issuer a validated token must name.",
            L,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
        _k(
            "sasl.oauthbearer.allow.unverified.audience",
            T.BOOLEAN,
            False,
            "Accept a validated token whose audience was not checked.",
            L,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
        _k(
            "sasl.oauthbearer.allow.unverified.issuer",
            T.BOOLEAN,
            False,
            "Accept a validated token whose issuer was not checked.",
            L,
            unsupported=_NO_TOKEN_VALIDATION,
        ),
    ]
