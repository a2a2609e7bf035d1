import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { loadTracingConfig } from '../../src/config/tracing.js';
import { ConfigError } from '../../src/errors.js';

describe('tracing settings from the standard OTEL_* variables', () => {
  it('is off unless an endpoint or the otlp exporter is asked for', () => {
    expect(loadConfig({}).tracing.enabled).toBe(false);
    expect(loadTracingConfig({ OTEL_SERVICE_NAME: 'x' }).enabled).toBe(false);
    expect(loadTracingConfig({ OTEL_TRACES_EXPORTER: 'otlp' })).toMatchObject({ enabled: true, url: 'http://localhost:4318/v1/traces' });
    expect(loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })).toMatchObject({
      enabled: true,
      url: 'http://c:4318/v1/traces',
      protocol: 'http/protobuf',
    });
    expect(
      loadTracingConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c/custom', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://other' }).url,
    ).toBe('https://c/custom');
  });

  it('stays off when disabled or the exporter is none, whatever else is set', () => {
    expect(loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).enabled).toBe(false);
    expect(loadTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }).enabled).toBe(false);
  });

  it('reads the protocol, sampler, resource and headers', () => {
    const c = loadTracingConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.01',
      OTEL_SERVICE_NAME: 'postroom-ingress',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,service.name=ignored',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc',
    });
    expect(c).toMatchObject({
      protocol: 'http/json',
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.01,
      serviceName: 'postroom-ingress',
      resourceAttributes: { 'deployment.environment': 'prod', 'service.name': 'postroom-ingress' },
      headers: { authorization: 'Bearer abc' },
    });
  });

  it('refuses what postroom cannot use, naming the variable', () => {
    const refused = (env: Record<string, string>, name: string) => {
      expect(() => loadTracingConfig(env)).toThrow(ConfigError);
      expect(() => loadTracingConfig(env)).toThrow(name);
    };
    refused({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL');
    refused({ OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER');
    refused({ OTEL_TRACES_SAMPLER: 'sometimes' }, 'OTEL_TRACES_SAMPLER');
    refused({ OTEL_TRACES_SAMPLER_ARG: '2' }, 'OTEL_TRACES_SAMPLER_ARG');
    refused({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://c' }, 'OTEL_EXPORTER_OTLP_ENDPOINT');
    refused({ OTEL_EXPORTER_OTLP_HEADERS: 'novalue' }, 'OTEL_EXPORTER_OTLP_HEADERS');
  });
});
