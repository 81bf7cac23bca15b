from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EventStream(_message.Message):
    __slots__ = ("incoming_rtp_packets", "outgoing_rtp_packets", "incoming_rtcp_packets", "outgoing_rtcp_packets", "begin_log_events", "end_log_events", "loss_based_bwe_updates", "delay_based_bwe_updates", "probe_clusters", "probe_success", "probe_failure", "alr_states", "audio_recv_stream_configs", "audio_send_stream_configs", "video_recv_stream_configs", "video_send_stream_configs")
    INCOMING_RTP_PACKETS_FIELD_NUMBER: _ClassVar[int]
    OUTGOING_RTP_PACKETS_FIELD_NUMBER: _ClassVar[int]
    INCOMING_RTCP_PACKETS_FIELD_NUMBER: _ClassVar[int]
    OUTGOING_RTCP_PACKETS_FIELD_NUMBER: _ClassVar[int]
    BEGIN_LOG_EVENTS_FIELD_NUMBER: _ClassVar[int]
    END_LOG_EVENTS_FIELD_NUMBER: _ClassVar[int]
    LOSS_BASED_BWE_UPDATES_FIELD_NUMBER: _ClassVar[int]
    DELAY_BASED_BWE_UPDATES_FIELD_NUMBER: _ClassVar[int]
    PROBE_CLUSTERS_FIELD_NUMBER: _ClassVar[int]
    PROBE_SUCCESS_FIELD_NUMBER: _ClassVar[int]
    PROBE_FAILURE_FIELD_NUMBER: _ClassVar[int]
    ALR_STATES_FIELD_NUMBER: _ClassVar[int]
    AUDIO_RECV_STREAM_CONFIGS_FIELD_NUMBER: _ClassVar[int]
    AUDIO_SEND_STREAM_CONFIGS_FIELD_NUMBER: _ClassVar[int]
    VIDEO_RECV_STREAM_CONFIGS_FIELD_NUMBER: _ClassVar[int]
    VIDEO_SEND_STREAM_CONFIGS_FIELD_NUMBER: _ClassVar[int]
    incoming_rtp_packets: _containers.RepeatedCompositeFieldContainer[IncomingRtpPackets]
    outgoing_rtp_packets: _containers.RepeatedCompositeFieldContainer[OutgoingRtpPackets]
    incoming_rtcp_packets: _containers.RepeatedCompositeFieldContainer[RtcpPackets]
    outgoing_rtcp_packets: _containers.RepeatedCompositeFieldContainer[RtcpPackets]
    begin_log_events: _containers.RepeatedCompositeFieldContainer[BeginLogEvent]
    end_log_events: _containers.RepeatedCompositeFieldContainer[EndLogEvent]
    loss_based_bwe_updates: _containers.RepeatedCompositeFieldContainer[LossBasedBweUpdates]
    delay_based_bwe_updates: _containers.RepeatedCompositeFieldContainer[DelayBasedBweUpdates]
    probe_clusters: _containers.RepeatedCompositeFieldContainer[BweProbeCluster]
    probe_success: _containers.RepeatedCompositeFieldContainer[BweProbeResultSuccess]
    probe_failure: _containers.RepeatedCompositeFieldContainer[BweProbeResultFailure]
    alr_states: _containers.RepeatedCompositeFieldContainer[AlrState]
    audio_recv_stream_configs: _containers.RepeatedCompositeFieldContainer[RecvStreamConfig]
    audio_send_stream_configs: _containers.RepeatedCompositeFieldContainer[SendStreamConfig]
    video_recv_stream_configs: _containers.RepeatedCompositeFieldContainer[RecvStreamConfig]
    video_send_stream_configs: _containers.RepeatedCompositeFieldContainer[SendStreamConfig]
    def __init__(self, incoming_rtp_packets: _Optional[_Iterable[_Union[IncomingRtpPackets, _Mapping]]] = ..., outgoing_rtp_packets: _Optional[_Iterable[_Union[OutgoingRtpPackets, _Mapping]]] = ..., incoming_rtcp_packets: _Optional[_Iterable[_Union[RtcpPackets, _Mapping]]] = ..., outgoing_rtcp_packets: _Optional[_Iterable[_Union[RtcpPackets, _Mapping]]] = ..., begin_log_events: _Optional[_Iterable[_Union[BeginLogEvent, _Mapping]]] = ..., end_log_events: _Optional[_Iterable[_Union[EndLogEvent, _Mapping]]] = ..., loss_based_bwe_updates: _Optional[_Iterable[_Union[LossBasedBweUpdates, _Mapping]]] = ..., delay_based_bwe_updates: _Optional[_Iterable[_Union[DelayBasedBweUpdates, _Mapping]]] = ..., probe_clusters: _Optional[_Iterable[_Union[BweProbeCluster, _Mapping]]] = ..., probe_success: _Optional[_Iterable[_Union[BweProbeResultSuccess, _Mapping]]] = ..., probe_failure: _Optional[_Iterable[_Union[BweProbeResultFailure, _Mapping]]] = ..., alr_states: _Optional[_Iterable[_Union[AlrState, _Mapping]]] = ..., audio_recv_stream_configs: _Optional[_Iterable[_Union[RecvStreamConfig, _Mapping]]] = ..., audio_send_stream_configs: _Optional[_Iterable[_Union[SendStreamConfig, _Mapping]]] = ..., video_recv_stream_configs: _Optional[_Iterable[_Union[RecvStreamConfig, _Mapping]]] = ..., video_send_stream_configs: _Optional[_Iterable[_Union[SendStreamConfig, _Mapping]]] = ...) -> None: ...

class IncomingRtpPackets(_message.Message):
    __slots__ = ("timestamp_ms", "marker", "payload_type", "sequence_number", "rtp_timestamp", "ssrc", "payload_size", "header_size", "padding_size", "number_of_deltas", "transport_sequence_number", "transmission_time_offset", "absolute_send_time", "timestamp_ms_deltas", "marker_deltas", "payload_type_deltas", "sequence_number_deltas", "rtp_timestamp_deltas", "ssrc_deltas", "payload_size_deltas", "header_size_deltas", "padding_size_deltas", "transport_sequence_number_deltas", "transmission_time_offset_deltas", "absolute_send_time_deltas")
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    MARKER_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_TYPE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    RTP_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    SSRC_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_SIZE_FIELD_NUMBER: _ClassVar[int]
    HEADER_SIZE_FIELD_NUMBER: _ClassVar[int]
    PADDING_SIZE_FIELD_NUMBER: _ClassVar[int]
    NUMBER_OF_DELTAS_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_SEQUENCE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    TRANSMISSION_TIME_OFFSET_FIELD_NUMBER: _ClassVar[int]
    ABSOLUTE_SEND_TIME_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_DELTAS_FIELD_NUMBER: _ClassVar[int]
    MARKER_DELTAS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_TYPE_DELTAS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_NUMBER_DELTAS_FIELD_NUMBER: _ClassVar[int]
    RTP_TIMESTAMP_DELTAS_FIELD_NUMBER: _ClassVar[int]
    SSRC_DELTAS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_SIZE_DELTAS_FIELD_NUMBER: _ClassVar[int]
    HEADER_SIZE_DELTAS_FIELD_NUMBER: _ClassVar[int]
    PADDING_SIZE_DELTAS_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_SEQUENCE_NUMBER_DELTAS_FIELD_NUMBER: _ClassVar[int]
    TRANSMISSION_TIME_OFFSET_DELTAS_FIELD_NUMBER: _ClassVar[int]
    ABSOLUTE_SEND_TIME_DELTAS_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    marker: bool
    payload_type: int
    sequence_number: int
    rtp_timestamp: int
    ssrc: int
    payload_size: int
    header_size: int
    padding_size: int
    number_of_deltas: int
    transport_sequence_number: int
    transmission_time_offset: int
    absolute_send_time: int
    timestamp_ms_deltas: bytes
    marker_deltas: bytes
    payload_type_deltas: bytes
    sequence_number_deltas: bytes
    rtp_timestamp_deltas: bytes
    ssrc_deltas: bytes
    payload_size_deltas: bytes
    header_size_deltas: bytes
    padding_size_deltas: bytes
    transport_sequence_number_deltas: bytes
    transmission_time_offset_deltas: bytes
    absolute_send_time_deltas: bytes
    def __init__(self, timestamp_ms: _Optional[int] = ..., marker: _Optional[bool] = ..., payload_type: _Optional[int] = ..., sequence_number: _Optional[int] = ..., rtp_timestamp: _Optional[int] = ..., ssrc: _Optional[int] = ..., payload_size: _Optional[int] = ..., header_size: _Optional[int] = ..., padding_size: _Optional[int] = ..., number_of_deltas: _Optional[int] = ..., transport_sequence_number: _Optional[int] = ..., transmission_time_offset: _Optional[int] = ..., absolute_send_time: _Optional[int] = ..., timestamp_ms_deltas: _Optional[bytes] = ..., marker_deltas: _Optional[bytes] = ..., payload_type_deltas: _Optional[bytes] = ..., sequence_number_deltas: _Optional[bytes] = ..., rtp_timestamp_deltas: _Optional[bytes] = ..., ssrc_deltas: _Optional[bytes] = ..., payload_size_deltas: _Optional[bytes] = ..., header_size_deltas: _Optional[bytes] = ..., padding_size_deltas: _Optional[bytes] = ..., transport_sequence_number_deltas: _Optional[bytes] = ..., transmission_time_offset_deltas: _Optional[bytes] = ..., absolute_send_time_deltas: _Optional[bytes] = ...) -> None: ...

class OutgoingRtpPackets(_message.Message):
    __slots__ = ("timestamp_ms", "marker", "payload_type", "sequence_number", "rtp_timestamp", "ssrc", "payload_size", "header_size", "padding_size", "number_of_deltas", "transport_sequence_number", "transmission_time_offset", "absolute_send_time", "timestamp_ms_deltas", "marker_deltas", "payload_type_deltas", "sequence_number_deltas", "rtp_timestamp_deltas", "ssrc_deltas", "payload_size_deltas", "header_size_deltas", "padding_size_deltas", "transport_sequence_number_deltas", "transmission_time_offset_deltas", "absolute_send_time_deltas")
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    MARKER_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_TYPE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    RTP_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    SSRC_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_SIZE_FIELD_NUMBER: _ClassVar[int]
    HEADER_SIZE_FIELD_NUMBER: _ClassVar[int]
    PADDING_SIZE_FIELD_NUMBER: _ClassVar[int]
    NUMBER_OF_DELTAS_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_SEQUENCE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    TRANSMISSION_TIME_OFFSET_FIELD_NUMBER: _ClassVar[int]
    ABSOLUTE_SEND_TIME_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_DELTAS_FIELD_NUMBER: _ClassVar[int]
    MARKER_DELTAS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_TYPE_DELTAS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_NUMBER_DELTAS_FIELD_NUMBER: _ClassVar[int]
    RTP_TIMESTAMP_DELTAS_FIELD_NUMBER: _ClassVar[int]
    SSRC_DELTAS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_SIZE_DELTAS_FIELD_NUMBER: _ClassVar[int]
    HEADER_SIZE_DELTAS_FIELD_NUMBER: _ClassVar[int]
    PADDING_SIZE_DELTAS_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_SEQUENCE_NUMBER_DELTAS_FIELD_NUMBER: _ClassVar[int]
    TRANSMISSION_TIME_OFFSET_DELTAS_FIELD_NUMBER: _ClassVar[int]
    ABSOLUTE_SEND_TIME_DELTAS_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    marker: bool
    payload_type: int
    sequence_number: int
    rtp_timestamp: int
    ssrc: int
    payload_size: int
    header_size: int
    padding_size: int
    number_of_deltas: int
    transport_sequence_number: int
    transmission_time_offset: int
    absolute_send_time: int
    timestamp_ms_deltas: bytes
    marker_deltas: bytes
    payload_type_deltas: bytes
    sequence_number_deltas: bytes
    rtp_timestamp_deltas: bytes
    ssrc_deltas: bytes
    payload_size_deltas: bytes
    header_size_deltas: bytes
    padding_size_deltas: bytes
    transport_sequence_number_deltas: bytes
    transmission_time_offset_deltas: bytes
    absolute_send_time_deltas: bytes
    def __init__(self, timestamp_ms: _Optional[int] = ..., marker: _Optional[bool] = ..., payload_type: _Optional[int] = ..., sequence_number: _Optional[int] = ..., rtp_timestamp: _Optional[int] = ..., ssrc: _Optional[int] = ..., payload_size: _Optional[int] = ..., header_size: _Optional[int] = ..., padding_size: _Optional[int] = ..., number_of_deltas: _Optional[int] = ..., transport_sequence_number: _Optional[int] = ..., transmission_time_offset: _Optional[int] = ..., absolute_send_time: _Optional[int] = ..., timestamp_ms_deltas: _Optional[bytes] = ..., marker_deltas: _Optional[bytes] = ..., payload_type_deltas: _Optional[bytes] = ..., sequence_number_deltas: _Optional[bytes] = ..., rtp_timestamp_deltas: _Optional[bytes] = ..., ssrc_deltas: _Optional[bytes] = ..., payload_size_deltas: _Optional[bytes] = ..., header_size_deltas: _Optional[bytes] = ..., padding_size_deltas: _Optional[bytes] = ..., transport_sequence_number_deltas: _Optional[bytes] = ..., transmission_time_offset_deltas: _Optional[bytes] = ..., absolute_send_time_deltas: _Optional[bytes] = ...) -> None: ...

class RtcpPackets(_message.Message):
    __slots__ = ("timestamp_ms", "raw_packet", "number_of_deltas", "timestamp_ms_deltas", "raw_packet_blobs")
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    RAW_PACKET_FIELD_NUMBER: _ClassVar[int]
    NUMBER_OF_DELTAS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_DELTAS_FIELD_NUMBER: _ClassVar[int]
    RAW_PACKET_BLOBS_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    raw_packet: bytes
    number_of_deltas: int
    timestamp_ms_deltas: bytes
    raw_packet_blobs: bytes
    def __init__(self, timestamp_ms: _Optional[int] = ..., raw_packet: _Optional[bytes] = ..., number_of_deltas: _Optional[int] = ..., timestamp_ms_deltas: _Optional[bytes] = ..., raw_packet_blobs: _Optional[bytes] = ...) -> None: ...

class BeginLogEvent(_message.Message):
    __slots__ = ("timestamp_ms", "version", "utc_time_ms")
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    UTC_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    version: int
    utc_time_ms: int
    def __init__(self, timestamp_ms: _Optional[int] = ..., version: _Optional[int] = ..., utc_time_ms: _Optional[int] = ...) -> None: ...

class EndLogEvent(_message.Message):
    __slots__ = ("timestamp_ms",)
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    def __init__(self, timestamp_ms: _Optional[int] = ...) -> None: ...

class LossBasedBweUpdates(_message.Message):
    __slots__ = ("timestamp_ms", "bitrate_bps", "fraction_loss", "total_packets", "number_of_deltas", "timestamp_ms_deltas", "bitrate_bps_deltas", "fraction_loss_deltas", "total_packets_deltas")
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    BITRATE_BPS_FIELD_NUMBER: _ClassVar[int]
    FRACTION_LOSS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PACKETS_FIELD_NUMBER: _ClassVar[int]
    NUMBER_OF_DELTAS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_DELTAS_FIELD_NUMBER: _ClassVar[int]
    BITRATE_BPS_DELTAS_FIELD_NUMBER: _ClassVar[int]
    FRACTION_LOSS_DELTAS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_PACKETS_DELTAS_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    bitrate_bps: int
    fraction_loss: int
    total_packets: int
    number_of_deltas: int
    timestamp_ms_deltas: bytes
    bitrate_bps_deltas: bytes
    fraction_loss_deltas: bytes
    total_packets_deltas: bytes
    def __init__(self, timestamp_ms: _Optional[int] = ..., bitrate_bps: _Optional[int] = ..., fraction_loss: _Optional[int] = ..., total_packets: _Optional[int] = ..., number_of_deltas: _Optional[int] = ..., timestamp_ms_deltas: _Optional[bytes] = ..., bitrate_bps_deltas: _Optional[bytes] = ..., fraction_loss_deltas: _Optional[bytes] = ..., total_packets_deltas: _Optional[bytes] = ...) -> None: ...

class DelayBasedBweUpdates(_message.Message):
    __slots__ = ("timestamp_ms", "bitrate_bps", "detector_state", "number_of_deltas", "timestamp_ms_deltas", "bitrate_bps_deltas", "detector_state_deltas")
    class DetectorState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        BWE_UNKNOWN_STATE: _ClassVar[DelayBasedBweUpdates.DetectorState]
        BWE_NORMAL: _ClassVar[DelayBasedBweUpdates.DetectorState]
        BWE_UNDERUSING: _ClassVar[DelayBasedBweUpdates.DetectorState]
        BWE_OVERUSING: _ClassVar[DelayBasedBweUpdates.DetectorState]
    BWE_UNKNOWN_STATE: DelayBasedBweUpdates.DetectorState
    BWE_NORMAL: DelayBasedBweUpdates.DetectorState
    BWE_UNDERUSING: DelayBasedBweUpdates.DetectorState
    BWE_OVERUSING: DelayBasedBweUpdates.DetectorState
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    BITRATE_BPS_FIELD_NUMBER: _ClassVar[int]
    DETECTOR_STATE_FIELD_NUMBER: _ClassVar[int]
    NUMBER_OF_DELTAS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_DELTAS_FIELD_NUMBER: _ClassVar[int]
    BITRATE_BPS_DELTAS_FIELD_NUMBER: _ClassVar[int]
    DETECTOR_STATE_DELTAS_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    bitrate_bps: int
    detector_state: DelayBasedBweUpdates.DetectorState
    number_of_deltas: int
    timestamp_ms_deltas: bytes
    bitrate_bps_deltas: bytes
    detector_state_deltas: bytes
    def __init__(self, timestamp_ms: _Optional[int] = ..., bitrate_bps: _Optional[int] = ..., detector_state: _Optional[_Union[DelayBasedBweUpdates.DetectorState, str]] = ..., number_of_deltas: _Optional[int] = ..., timestamp_ms_deltas: _Optional[bytes] = ..., bitrate_bps_deltas: _Optional[bytes] = ..., detector_state_deltas: _Optional[bytes] = ...) -> None: ...

class BweProbeCluster(_message.Message):
    __slots__ = ("timestamp_ms", "id", "bitrate_bps", "min_packets", "min_bytes")
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    BITRATE_BPS_FIELD_NUMBER: _ClassVar[int]
    MIN_PACKETS_FIELD_NUMBER: _ClassVar[int]
    MIN_BYTES_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    id: int
    bitrate_bps: int
    min_packets: int
    min_bytes: int
    def __init__(self, timestamp_ms: _Optional[int] = ..., id: _Optional[int] = ..., bitrate_bps: _Optional[int] = ..., min_packets: _Optional[int] = ..., min_bytes: _Optional[int] = ...) -> None: ...

class BweProbeResultSuccess(_message.Message):
    __slots__ = ("timestamp_ms", "id", "bitrate_bps")
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    BITRATE_BPS_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    id: int
    bitrate_bps: int
    def __init__(self, timestamp_ms: _Optional[int] = ..., id: _Optional[int] = ..., bitrate_bps: _Optional[int] = ...) -> None: ...

class BweProbeResultFailure(_message.Message):
    __slots__ = ("timestamp_ms", "id", "failure")
    class FailureReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNKNOWN: _ClassVar[BweProbeResultFailure.FailureReason]
        INVALID_SEND_RECEIVE_INTERVAL: _ClassVar[BweProbeResultFailure.FailureReason]
        INVALID_SEND_RECEIVE_RATIO: _ClassVar[BweProbeResultFailure.FailureReason]
        TIMEOUT: _ClassVar[BweProbeResultFailure.FailureReason]
    UNKNOWN: BweProbeResultFailure.FailureReason
    INVALID_SEND_RECEIVE_INTERVAL: BweProbeResultFailure.FailureReason
    INVALID_SEND_RECEIVE_RATIO: BweProbeResultFailure.FailureReason
    TIMEOUT: BweProbeResultFailure.FailureReason
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    id: int
    failure: BweProbeResultFailure.FailureReason
    def __init__(self, timestamp_ms: _Optional[int] = ..., id: _Optional[int] = ..., failure: _Optional[_Union[BweProbeResultFailure.FailureReason, str]] = ...) -> None: ...

class AlrState(_message.Message):
    __slots__ = ("timestamp_ms", "in_alr")
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    IN_ALR_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    in_alr: bool
    def __init__(self, timestamp_ms: _Optional[int] = ..., in_alr: _Optional[bool] = ...) -> None: ...

class RtpHeaderExtensionConfig(_message.Message):
    __slots__ = ("transmission_time_offset_id", "absolute_send_time_id", "transport_sequence_number_id")
    TRANSMISSION_TIME_OFFSET_ID_FIELD_NUMBER: _ClassVar[int]
    ABSOLUTE_SEND_TIME_ID_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_SEQUENCE_NUMBER_ID_FIELD_NUMBER: _ClassVar[int]
    transmission_time_offset_id: int
    absolute_send_time_id: int
    transport_sequence_number_id: int
    def __init__(self, transmission_time_offset_id: _Optional[int] = ..., absolute_send_time_id: _Optional[int] = ..., transport_sequence_number_id: _Optional[int] = ...) -> None: ...

class SendStreamConfig(_message.Message):
    __slots__ = ("timestamp_ms", "ssrc", "rtx_ssrc", "header_extensions")
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    SSRC_FIELD_NUMBER: _ClassVar[int]
    RTX_SSRC_FIELD_NUMBER: _ClassVar[int]
    HEADER_EXTENSIONS_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    ssrc: int
    rtx_ssrc: int
    header_extensions: RtpHeaderExtensionConfig
    def __init__(self, timestamp_ms: _Optional[int] = ..., ssrc: _Optional[int] = ..., rtx_ssrc: _Optional[int] = ..., header_extensions: _Optional[_Union[RtpHeaderExtensionConfig, _Mapping]] = ...) -> None: ...

class RecvStreamConfig(_message.Message):
    __slots__ = ("timestamp_ms", "remote_ssrc", "local_ssrc", "rtx_ssrc", "header_extensions")
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    REMOTE_SSRC_FIELD_NUMBER: _ClassVar[int]
    LOCAL_SSRC_FIELD_NUMBER: _ClassVar[int]
    RTX_SSRC_FIELD_NUMBER: _ClassVar[int]
    HEADER_EXTENSIONS_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    remote_ssrc: int
    local_ssrc: int
    rtx_ssrc: int
    header_extensions: RtpHeaderExtensionConfig
    def __init__(self, timestamp_ms: _Optional[int] = ..., remote_ssrc: _Optional[int] = ..., local_ssrc: _Optional[int] = ..., rtx_ssrc: _Optional[int] = ..., header_extensions: _Optional[_Union[RtpHeaderExtensionConfig, _Mapping]] = ...) -> None: ...
